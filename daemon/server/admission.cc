#include "server/admission.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "batchd/wire/convert.h"
#include "batchd/wire/framing.h"

namespace batchd::daemon {

std::optional<Error> ConnectionCaps::admit(uid_t uid) {
  if (total_ >= max_total_) {
    return Error(ErrorCode::kResourceExhausted,
                 "batchd already serves " + std::to_string(total_) +
                     " connections, its limit (limits.max_connections " + "= " + std::to_string(max_total_) +
                     "): close unused connections, or raise the key in the " + "daemon's config");
  }
  uint32_t& mine = per_uid_[uid];
  if (mine >= max_per_uid_) {
    return Error(ErrorCode::kResourceExhausted,
                 "uid " + std::to_string(uid) + " already has " + std::to_string(mine) +
                     " connections to batchd, the limit per user (limits.max_connections_per_uid = " +
                     std::to_string(max_per_uid_) + "): close unused ones, or raise the key in the daemon's config");
  }
  ++mine;
  ++total_;
  return std::nullopt;
}

void ConnectionCaps::leave(uid_t uid) {
  auto it = per_uid_.find(uid);
  if (it == per_uid_.end()) return;
  if (--it->second == 0) per_uid_.erase(it);
  --total_;
}

FdReserve::FdReserve() : fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

std::optional<std::string> FdReserve::refuse_pending(int listen_fd) {
  fd_.reset();
  wire::UniqueFd client(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  const int accept_errno = errno;
  std::optional<std::string> done;
  if (client.valid()) {
    rlimit nofile{};
    ::getrlimit(RLIMIT_NOFILE, &nofile);
    const std::string limit = nofile.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(nofile.rlim_cur);
    const std::string why = "batchd is out of file descriptors (limit " + limit +
                            " open files, RLIMIT_NOFILE): it cannot serve another connection now; raise LimitNOFILE "
                            "in its systemd unit (or ulimit -n where it is started), or close unused connections";
    refuse(std::move(client), Error(ErrorCode::kResourceExhausted, why));
    done = "refused a connection: " + why;
  } else if (accept_errno != EAGAIN && accept_errno != EWOULDBLOCK) {
    spdlog::error("accept with the reserve descriptor freed: {}", std::strerror(accept_errno));
  }
  fd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!fd_.valid()) spdlog::error("cannot take the reserve descriptor again: {}", std::strerror(errno));
  return done;
}

void refuse(wire::UniqueFd fd, const Error& error) {
  wire::Reply reply;
  *reply.mutable_error() = wire::to_wire(error);
  auto frame = wire::encode_frame(reply);
  if (frame.ok()) (void)::send(fd.get(), frame->data(), frame->size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  // Closing now: the client reads the frame, then end-of-file (or ECONNRESET if it had sent a request already).
}

void RefusalLog::warn(const std::string& what) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::seconds(1)) {
    ++quiet_;
    return;
  }
  if (quiet_ > 0) {
    spdlog::warn("{} (and {} more refusals since the last such line)", what, quiet_);
  } else {
    spdlog::warn("{}", what);
  }
  last_ = now;
  quiet_ = 0;
}

}  // namespace batchd::daemon
