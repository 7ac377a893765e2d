#include "client_core.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "batchd/wire/convert.h"
#include "batchd/wire/fd_passing.h"

namespace batchd::detail {

namespace {

uint64_t event_stream_id(const wire::Reply& r) {
  switch (r.body_case()) {
    case wire::Reply::kBatchReady: return r.batch_ready().stream_id();
    case wire::Reply::kStreamEnd: return r.stream_end().stream_id();
    case wire::Reply::kStreamFailed: return r.stream_failed().stream_id();
    default: return 0;
  }
}

}  // namespace

Result<std::shared_ptr<ClientCore>> ClientCore::connect(const std::string& socket_path) {
  const std::string path = socket_path.empty() ? wire::default_socket_path() : socket_path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Error(ErrorCode::kInvalidArgument, "socket path '" + path + "' is too long for a Unix socket");
  }
  path.copy(addr.sun_path, path.size());
  wire::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return posix_error("socket()", errno);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    const int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      return Error(ErrorCode::kUnavailable,
                   "no batchd is listening on " + path + " (" + std::strerror(err) +
                       "); start it (systemctl start batchd, or batchd --socket " + path +
                       ") or point BATCHD_SOCKET at the right socket");
    }
    if (err == EACCES || err == EPERM) {
      return Error(ErrorCode::kIo, "permission denied connecting to " + path +
                                       "; add this user to the socket's group (see daemon.socket_mode)");
    }
    return posix_error("cannot connect to " + path, err);
  }
  return std::shared_ptr<ClientCore>(new ClientCore(std::move(fd), path));
}

Error ClientCore::broken(const Error& why) {
  if (!broken_) broken_ = why;
  return *broken_;
}

Status ClientCore::send(wire::Request request) {
  auto frame = wire::encode_frame(request);
  if (!frame.ok()) return frame.error();
  MutexLock lock(&write_mu_);
  auto st = wire::send_all(fd_.get(), frame->data(), frame->size());
  if (!st.ok()) {
    return Error(ErrorCode::kUnavailable, "lost the connection to batchd at " + path_ + ": " + st.error().message());
  }
  return ok_status();
}

Status ClientCore::read_one_frame(bool wait, bool* got) {
  if (got != nullptr) *got = false;
  if (broken_) return *broken_;
  std::string payload;
  for (;;) {
    auto more = decoder_.next(&payload);
    if (!more.ok()) return broken(more.error());
    if (*more) break;
    if (pollfd ready{fd_.get(), POLLIN, 0}; !wait && ::poll(&ready, 1, 0) != 1) return ok_status();
    auto n = wire::recv_some(fd_.get(), buffer_.data(), buffer_.size(), &fds_scratch_, 8);
    for (auto& fd : fds_scratch_) fds_.push_back(std::move(fd));
    fds_scratch_.clear();
    if (!n.ok()) return broken(n.error().with_context("reading from batchd at " + path_));
    if (*n == 0) {
      return broken(Error(ErrorCode::kUnavailable, "batchd at " + path_ +
                                                       " closed the connection (daemon stopped or restarted?)"));
    }
    decoder_.feed(buffer_.data(), *n);
  }
  Received received;
  if (auto st = wire::parse_payload(payload, &received.reply, "reply from the daemon"); !st.ok()) {
    return broken(st.error());
  }
  if (received.reply.has_stream_opened() && received.reply.stream_opened().fd_attached()) {
    if (fds_.empty()) {
      return broken(Error(ErrorCode::kProtocol, "the daemon announced a segment fd that did not arrive"));
    }
    received.fd = std::move(fds_.front());
    fds_.pop_front();
  }
  if (got != nullptr) *got = true;
  const uint64_t rid = received.reply.request_id();
  if (rid != 0) {
    replies_[rid] = std::move(received);
  } else if (const uint64_t sid = event_stream_id(received.reply); sid != 0) {
    if (!closed_streams_.count(sid)) events_[sid].push_back(std::move(received.reply));
  } else if (received.reply.has_error()) {
    told_why_ = !broken_;
    return broken(wire::from_wire(received.reply.error()));  // connection-level error: the daemon closes us
  }
  return ok_status();
}

Result<Received> ClientCore::call(wire::Request request) {
  MutexLock lock(&read_mu_);
  const uint64_t id = next_request_id_++;
  request.set_request_id(id);
  if (auto sent = send(std::move(request)); !sent.ok()) return why_send_failed(sent.error());
  for (;;) {
    if (auto it = replies_.find(id); it != replies_.end()) {
      Received r = std::move(it->second);
      replies_.erase(it);
      if (r.reply.has_error()) return wire::from_wire(r.reply.error());
      return r;
    }
    BATCHD_RETURN_IF_ERROR(read_one_frame());
  }
}

Error ClientCore::why_send_failed(const Error& failure) {
  if (broken_) return *broken_;
  // A daemon that turned this connection away (a connection cap, out of file descriptors) wrote its reason before
  // closing: read what is already there, without waiting for more.
  (void)read_available();
  return told_why_ ? *broken_ : failure;
}

Status ClientCore::read_available() {
  for (bool got = true; got;) BATCHD_RETURN_IF_ERROR(read_one_frame(/*wait=*/false, &got));
  return ok_status();
}

Result<wire::Reply> ClientCore::next_event(uint64_t stream_id, bool revocable) {
  MutexLock lock(&read_mu_);
  if (revocable) (void)read_available();  // a broken connection surfaces below, after what is queued
  for (;;) {
    auto& queue = events_[stream_id];
    if (revocable) {
      auto revoked = std::find_if(queue.begin(), queue.end(), [](const wire::Reply& r) {
        return r.has_stream_failed() && r.stream_failed().leases_revoked();
      });
      if (revoked != queue.end()) queue.erase(queue.begin(), revoked);
    }
    if (!queue.empty()) {
      wire::Reply r = std::move(queue.front());
      queue.pop_front();
      return r;
    }
    BATCHD_RETURN_IF_ERROR(read_one_frame());
  }
}

void ClientCore::forget_stream(uint64_t stream_id) {
  MutexLock lock(&read_mu_);
  events_.erase(stream_id);
  closed_streams_.insert(stream_id);
}

}  // namespace batchd::detail
