// server.h — the daemon's control plane: a Unix stream socket served by Boost.Asio, any number of clients.
//
// create() binds the socket with the configured mode (default 0660). If the path exists it must be a socket: one
// that answers means another batchd already serves it (refused, nothing touched); one that does not is stale and
// is replaced. stop() drains: running streams get a "daemon shutting down" StreamFailed, connections close after
// their queued frames are written, and the socket file is removed.
//
// Every connection is admitted by its peer's credentials (peer_credentials.h): the connection caps and the fd
// reserve of admission.h turn the surplus away with an Error frame instead of a hang, and AdminPolicy
// (authorization.h) decides whether it is an admin's. Memory that closed connections held is given back to the
// system (malloc_trim) shortly after they go.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>

#include "server/server_settings.h"
#include "server/admission.h"
#include "server/authorization.h"
#include "server/connection.h"
#include "data/dataset.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {

class Server final {
 public:
  static Result<std::unique_ptr<Server>> create(boost::asio::io_context& io, const ServerSettings& config,
                                                StreamManager& streams,
                                                const DatasetRegistry& datasets);
  ~Server();

  void start();
  // Stops accepting, fails running streams with `reason`, closes every connection once its queued frames are
  // written; `on_drained` runs (on the io_context) when the last connection is gone.
  void stop(const std::string& reason, std::function<void()> on_drained);

  // Serves an already-connected socket as a client connection (the fuzz target feeds its input this way).
  void adopt(boost::asio::local::stream_protocol::socket socket);

  // What a client's Shutdown request does (main: the same drain as SIGTERM); unset = nothing (the fuzz target).
  void set_shutdown_handler(std::function<void()> handler) { shutdown_handler_ = std::move(handler); }
  // Remote shards' cache, for status (null: none).
  void set_shard_store(std::shared_ptr<const remote::ShardStore> store) { shard_store_ = std::move(store); }
  void request_shutdown() {
    if (shutdown_handler_) boost::asio::post(io_, shutdown_handler_);
  }

  void remove(uint64_t connection_id);
  // The daemon's status as `view` may see it (StatusView: an admin's, a non-admin's, the metrics endpoint's), its
  // streams from `page` on (status_page.h; the default lists every one).
  void fill_status(wire::StatusReply* status, const StatusView& view, const StatusPage& page = {}) const;
  // The answer to a HealthRequest: version, instance, pid, uptime, draining, workers.
  void fill_health(wire::HealthReply* health) const;
  size_t connections() const { return connections_.size(); }
  const AdminPolicy& admin_policy() const { return admin_policy_; }
  // Logs a refused admin request (at most one line a second; RefusalLog).
  void log_denied(const std::string& what) { denied_.warn(what); }
  // Scratch space for one read (connections read into it and copy out what they keep): valid until the next read.
  std::vector<char>& read_buffer() { return read_buffer_; }

 private:
  Server(boost::asio::io_context& io, const ServerSettings& config, StreamManager& streams,
         const DatasetRegistry& datasets, AdminPolicy admin_policy);
  void accept();
  void retry_accept_later();
  void trim_memory_soon();

  boost::asio::io_context& io_;
  const ServerSettings& config_;
  StreamManager& streams_;
  const DatasetRegistry& datasets_;
  std::shared_ptr<const remote::ShardStore> shard_store_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;
  AdminPolicy admin_policy_;
  ConnectionCaps caps_;
  FdReserve fd_reserve_;
  RefusalLog refusals_;  // connections turned away
  RefusalLog denied_;    // admin requests from non-admins
  std::vector<char> read_buffer_ = std::vector<char>(1 << 16);
  boost::asio::steady_timer trim_timer_;
  bool trim_pending_ = false;
  std::map<uint64_t, std::shared_ptr<Connection>> connections_;
  uint64_t next_connection_id_ = 1;
  bool stopped_ = false;
  std::function<void()> on_drained_;
  std::function<void()> shutdown_handler_;
  bool socket_bound_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace batchd::daemon
