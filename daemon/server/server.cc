#include "server/server.h"

#include "data/remote_status.h"
#include "server/peer_credentials.h"

#include <grp.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include "server/server_settings.h"
#include "base/shm_budget.h"

namespace batchd::daemon {

namespace local = boost::asio::local;

namespace {

// Refuses a path that is not a socket or that a live daemon answers on; removes a stale socket.
Status prepare_socket_path(boost::asio::io_context& io, const std::string& path) {
  if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
    return Error(ErrorCode::kInvalidArgument, "socket path '" + path + "' must be 1-" +
                                                  std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes long");
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return ok_status();
  if (!S_ISSOCK(st.st_mode)) {
    return Error(ErrorCode::kInvalidArgument, path + " exists and is not a socket; remove it or choose another "
                                                     "--socket");
  }
  local::stream_protocol::socket probe(io);
  boost::system::error_code ec;
  probe.connect(local::stream_protocol::endpoint(path), ec);
  if (!ec) {
    return Error(ErrorCode::kUnavailable, "another batchd is already serving " + path +
                                              "; stop it first (batchctl --socket " + path +
                                              " status shows it) or choose another --socket");
  }
  spdlog::info("removing stale socket {}", path);
  ::unlink(path.c_str());
  return ok_status();
}

}  // namespace

Server::Server(boost::asio::io_context& io, const ServerSettings& config, StreamManager& streams,
               const DatasetRegistry& datasets, AdminPolicy admin_policy)
    : io_(io),
      config_(config),
      streams_(streams),
      datasets_(datasets),
      acceptor_(io),
      accept_retry_(io),
      admin_policy_(std::move(admin_policy)),
      caps_(config.limits),
      trim_timer_(io) {}

Result<std::unique_ptr<Server>> Server::create(boost::asio::io_context& io, const ServerSettings& config,
                                               StreamManager& streams,
                                               const DatasetRegistry& datasets) {
  auto admin_policy = AdminPolicy::create(config.admin_group);
  if (!admin_policy.ok()) return admin_policy.error();
  if (rlimit nofile{}; ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
                       config.limits.max_connections + 64 > nofile.rlim_cur) {
    spdlog::warn("limits.max_connections ({}) is not well below the open-file limit ({}): past it, clients are "
                 "refused with \"out of file descriptors\"; raise LimitNOFILE", config.limits.max_connections,
                 nofile.rlim_cur);
  }
  BATCHD_RETURN_IF_ERROR(prepare_socket_path(io, config.socket));
  std::unique_ptr<Server> server(new Server(io, config, streams, datasets, std::move(admin_policy).value()));
  if (!server->fd_reserve_.held()) return posix_error("cannot open the reserve descriptor (/dev/null)", errno);
  boost::system::error_code ec;
  const local::stream_protocol::endpoint endpoint(config.socket);
  server->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) server->acceptor_.bind(endpoint, ec);
  if (ec) {
    return Error(ErrorCode::kUnavailable, "cannot bind socket " + config.socket + ": " + ec.message() +
                                              "; check that its directory exists and is writable, or pass "
                                              "--socket PATH");
  }
  server->socket_bound_ = true;
  if (::chmod(config.socket.c_str(), config.socket_mode) != 0) {
    return posix_error("cannot set mode of socket " + config.socket, errno);
  }
  if (!config.socket_group.empty()) {
    group* g = ::getgrnam(config.socket_group.c_str());
    if (g == nullptr) {
      return Error(ErrorCode::kInvalidArgument, "daemon.socket_group '" + config.socket_group +
                                                    "' is not a group on this host (see getent group)");
    }
    if (::chown(config.socket.c_str(), static_cast<uid_t>(-1), g->gr_gid) != 0) {
      return posix_error("cannot give socket " + config.socket + " to group " + config.socket_group, errno);
    }
  }
  server->acceptor_.listen(local::stream_protocol::acceptor::max_listen_connections, ec);
  if (ec) return Error(ErrorCode::kIo, "cannot listen on " + config.socket + ": " + ec.message());
  return server;
}

Server::~Server() {
  if (socket_bound_) ::unlink(config_.socket.c_str());
}

void Server::start() { accept(); }

void Server::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, local::stream_protocol::socket socket) {
    if (ec == boost::asio::error::operation_aborted || stopped_) return;
    if (ec == boost::asio::error::no_descriptors || ec.value() == ENFILE) {
      // Out of fds: the pending connection is told so on the reserve fd instead of waiting in the backlog.
      auto refused = fd_reserve_.refuse_pending(acceptor_.native_handle());
      if (!refused) return retry_accept_later();
      refusals_.warn(*refused);
    } else if (ec) {
      spdlog::warn("accept on {}: {}; retrying in 100 ms", config_.socket, ec.message());
      return retry_accept_later();
    } else {
      adopt(std::move(socket));
    }
    accept();
  });
}

// Pauses before accepting again rather than spinning on a listening socket that stays readable.
void Server::retry_accept_later() {
  accept_retry_.expires_after(std::chrono::milliseconds(100));
  accept_retry_.async_wait([this](const boost::system::error_code& e) {
    if (!e && !stopped_) accept();
  });
}

void Server::adopt(local::stream_protocol::socket socket) {
  auto credentials = peer_credentials(socket.native_handle());
  if (!credentials.ok()) {
    spdlog::warn("new connection: {}; it is served as an unknown uid", credentials.error().message());
  }
  PeerCredentials peer = credentials.ok() ? std::move(credentials).value() : PeerCredentials{};
  if (auto refused = caps_.admit(peer.uid)) {
    refusals_.warn("refused a connection from " + peer.describe() + ": " + refused->message());
    refuse(wire::UniqueFd(socket.release()), *refused);
    return;
  }
  const uint64_t id = next_connection_id_++;
  const bool admin = admin_policy_.is_admin(peer);
  auto connection = std::make_shared<Connection>(std::move(socket), id, *this, streams_, config_.limits,
                                                 std::move(peer), admin);
  connections_[id] = connection;
  connection->start();
}

void Server::stop(const std::string& reason, std::function<void()> on_drained) {
  if (stopped_) return;
  stopped_ = true;
  on_drained_ = std::move(on_drained);
  boost::system::error_code ec;
  acceptor_.close(ec);
  accept_retry_.cancel();
  trim_timer_.cancel();
  if (socket_bound_) {
    ::unlink(config_.socket.c_str());
    socket_bound_ = false;
  }
  streams_.shutdown(reason);
  auto snapshot = connections_;
  for (auto& [id, connection] : snapshot) connection->close(false);
  if (connections_.empty() && on_drained_) boost::asio::post(io_, std::exchange(on_drained_, nullptr));
}

void Server::remove(uint64_t connection_id) {
  if (auto it = connections_.find(connection_id); it != connections_.end()) {
    caps_.leave(it->second->credentials().uid);
    connections_.erase(it);
    trim_memory_soon();
  }
  if (stopped_ && connections_.empty() && on_drained_) boost::asio::post(io_, std::exchange(on_drained_, nullptr));
}

// Closed connections leave free heap pages behind (their buffers, their replies): malloc_trim gives them back to
// the system, once for a whole burst of closes.
void Server::trim_memory_soon() {
  if (trim_pending_ || stopped_) return;
  trim_pending_ = true;
  trim_timer_.expires_after(std::chrono::milliseconds(200));
  trim_timer_.async_wait([this](const boost::system::error_code& ec) {
    trim_pending_ = false;
    if (!ec) ::malloc_trim(0);
  });
}

void Server::fill_status(wire::StatusReply* status, const StatusView& view, const StatusPage& page) const {
  status->set_daemon_pid(::getpid());
  status->set_version(BATCHD_VERSION);
  status->set_uptime_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  status->set_default_strategy(config_.shm_strategy);
  status->set_admin(view.all);
  // The budget the segment pool admits against: ShmBudget resolves max_shm_bytes = 0 the same way here.
  status->set_shm_budget_bytes(ShmBudget(config_.limits.max_shm_bytes).limit());
  status->set_connections(static_cast<uint32_t>(connections_.size()));
  for (const auto& [name, d] : datasets_.describe()) {
    wire::DatasetInfo* entry = status->add_dataset_entries();
    entry->set_name(name);
    entry->set_format(d.format);
    entry->set_detail(d.detail);
    entry->set_samples(d.samples);
    entry->set_fingerprint(d.fingerprint.hex);
    entry->set_fingerprint_covers(d.fingerprint.covers);
    entry->set_fingerprint_status(d.fingerprint_status);
    switch (d.state) {
      case DatasetRegistry::State::kAvailable:
        entry->set_state("available");
        status->add_datasets(d.detail.empty() ? name : name + " (" + d.detail + ")");
        break;
      case DatasetRegistry::State::kLoading:
        entry->set_state("indexing");
        status->add_datasets(name + " (" + d.detail + ")");
        break;
      case DatasetRegistry::State::kUnavailable:
        entry->set_state("failed");
        status->add_datasets(name + " (unavailable: " + d.detail + ")");
    }
  }
  fill_remote_status(datasets_, shard_store_.get(), status);
  streams_.fill_status(status, view, page);  // last: the page's bound counts everything above
}

void Server::fill_health(wire::HealthReply* health) const {
  health->set_daemon_pid(::getpid());
  health->set_version(BATCHD_VERSION);
  health->set_uptime_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  streams_.fill_health(health);
}

}  // namespace batchd::daemon
