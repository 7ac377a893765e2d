// client_core.cc — ClientCore (client_core.h): requests out, frames in and filed, deadlines (connect():
// client_connect.cc).
#include "core/client_core.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

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

// "OpenStream", "StatusRequest", "OpenStream (dry run)", ...: the request's message type, for error messages.
std::string request_name(const wire::Request& request) {
  const auto* field = request.GetDescriptor()->FindFieldByNumber(request.body_case());
  std::string name = field != nullptr && field->message_type() != nullptr ? field->message_type()->name() : "request";
  if (request.has_open_stream() && request.open_stream().dry_run()) name += " (dry run)";
  return name;
}

}  // namespace

Error ClientCore::broken(const Error& why) {
  if (!broken_) broken_ = why;
  filed_.notify_all();
  return *broken_;
}

Error ClientCore::timed_out(const std::string& what, bool sending) {
  ::shutdown(fd_.get(), SHUT_RDWR);  // the reader, if any, wakes up at EOF
  return broken(Error(ErrorCode::kUnavailable,
                      "the daemon at " + path_ + " accepted the connection but did not " +
                          (sending ? "read " : "answer ") + what + " within " + seconds_text(timeout_) + ": " +
                          timeout_fix() + ". This connection is closed (its streams end); connect again"));
}

Result<bool> ClientCore::send_frame(const wire::Request& request, const Deadline& deadline) {
  auto frame = wire::encode_frame(request);
  if (!frame.ok()) return frame.error();
  MutexLock lock(&write_mu_);
  for (size_t done = 0; done < frame->size();) {
    auto n = wire::send_some(fd_.get(), frame->data() + done, frame->size() - done);
    if (!n.ok()) {
      return Error(ErrorCode::kUnavailable, "lost the connection to batchd at " + path_ + ": " + n.error().message());
    }
    if (*n != wire::kWouldBlock) {
      done += *n;
      continue;
    }
    pollfd ready{fd_.get(), POLLOUT, 0};
    const int rc = ::poll(&ready, 1, deadline.poll_ms());
    if (rc < 0 && errno != EINTR) return posix_error("poll on the connection to batchd at " + path_, errno);
    if (rc == 0) {
      ::shutdown(fd_.get(), SHUT_RDWR);  // before anyone else writes after the half frame
      return false;
    }
  }
  return true;
}

Status ClientCore::send(const wire::Request& request) {
  auto sent = send_frame(request, Deadline::after(timeout_));
  if (sent.ok() && *sent) return ok_status();
  MutexLock lock(&mu_);
  if (!sent.ok()) return broken_ ? *broken_ : sent.error();
  return timed_out(request_name(request), /*sending=*/true);
}

Result<bool> ClientCore::read_frames(const Deadline& deadline, std::vector<Received>* out) {
  const size_t before = out->size();
  for (;;) {
    std::string payload;
    for (;;) {
      auto more = decoder_.next(&payload);
      if (!more.ok()) return more.error();
      if (!*more) break;
      Received received;
      BATCHD_RETURN_IF_ERROR(wire::parse_payload(payload, &received.reply, "reply from the daemon"));
      // Frames that carry an fd: a file_descriptor stream's StreamOpened; an attached worker's WorkerAttached (the
      // segment) and progress_page (its page).
      if ((received.reply.has_stream_opened() && received.reply.stream_opened().fd_attached()) ||
          received.reply.has_worker_attached() || received.reply.progress_page()) {
        if (fds_.empty()) return Error(ErrorCode::kProtocol, "the daemon announced a segment fd that did not arrive");
        received.fd = std::move(fds_.front());
        fds_.pop_front();
      }
      out->push_back(std::move(received));
    }
    if (out->size() > before) return true;
    pollfd ready{fd_.get(), POLLIN, 0};
    const int rc = ::poll(&ready, 1, deadline.poll_ms());
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return posix_error("poll on the connection to batchd at " + path_, errno);
    if (rc == 0) return false;
    auto n = wire::recv_some(fd_.get(), buffer_.data(), buffer_.size(), &fds_scratch_, 8);
    for (auto& fd : fds_scratch_) fds_.push_back(std::move(fd));
    fds_scratch_.clear();
    if (!n.ok()) return n.error().with_context("reading from batchd at " + path_);
    if (*n == wire::kWouldBlock) continue;
    if (*n == 0) {
      return Error(ErrorCode::kUnavailable,
                   "batchd at " + path_ + " closed the connection (daemon stopped or restarted?)");
    }
    decoder_.feed(buffer_.data(), *n);
  }
}

void ClientCore::file(Received received) {
  const uint64_t rid = received.reply.request_id();
  const auto body = received.reply.body_case();
  if (rid != 0) {
    replies_[rid] = std::move(received);
  } else if (body == wire::Reply::kProgressPage || body == wire::Reply::kWorkerTask ||
             body == wire::Reply::kWorkerDetach) {
    worker_events_.push_back(std::move(received));
  } else if (const uint64_t sid = event_stream_id(received.reply); sid != 0) {
    if (!closed_streams_.count(sid)) events_[sid].push_back(std::move(received.reply));
  } else if (received.reply.has_error()) {
    told_why_ = !broken_;
    broken(wire::from_wire(received.reply.error()));  // connection-level error: the daemon closes us
  }
}

Status ClientCore::step(const Deadline& deadline, const std::string& what) {
  if (broken_) return *broken_;
  if (deadline.expired()) return timed_out(what, /*sending=*/false);
  wait_or_read(deadline);
  return ok_status();  // the caller looks at what was filed first; the next step reports a break or the deadline
}

void ClientCore::wait_or_read(const Deadline& deadline) {
  if (reading_) {
    if (deadline.is_never()) {
      filed_.wait(mu_);
    } else {
      filed_.wait_until(mu_, deadline.when());
    }
    return;
  }
  read_and_file(deadline, /*all_there=*/false);
}

void ClientCore::read_and_file(const Deadline& deadline, bool all_there) {
  reading_ = true;
  std::vector<Received> frames;
  mu_.unlock();  // other threads take what was filed meanwhile; reading_ keeps them from reading
  Result<bool> got = read_frames(deadline, &frames);
  while (all_there && got.ok() && *got) got = read_frames(deadline, &frames);
  mu_.lock();
  reading_ = false;
  for (auto& f : frames) file(std::move(f));
  if (!got.ok()) broken(got.error());
  filed_.notify_all();  // the frames, or the reader's role, for the others
}

Result<Received> ClientCore::call(wire::Request request) {
  const Deadline deadline = Deadline::after(timeout_);
  const std::string what = request_name(request);
  uint64_t id;
  {
    MutexLock lock(&mu_);
    if (broken_) return *broken_;
    id = next_request_id_++;
  }
  request.set_request_id(id);
  auto sent = send_frame(request, deadline);
  MutexLock lock(&mu_);
  if (!sent.ok()) return why_send_failed(sent.error());
  if (!*sent) return timed_out(what, /*sending=*/true);
  for (;;) {
    if (auto it = replies_.find(id); it != replies_.end()) {
      Received r = std::move(it->second);
      replies_.erase(it);
      if (r.reply.has_error()) return wire::from_wire(r.reply.error());
      return r;
    }
    BATCHD_RETURN_IF_ERROR(step(deadline, what));
  }
}

Error ClientCore::why_send_failed(const Error& failure) {
  if (broken_ || reading_) return broken_ ? *broken_ : failure;
  // A daemon that turned this connection away (a connection cap, out of file descriptors) wrote its reason before
  // closing: read what is already there, without waiting for more.
  read_and_file(Deadline::passed(), /*all_there=*/true);
  return told_why_ ? *broken_ : failure;
}

Result<wire::Reply> ClientCore::next_event(uint64_t stream_id, bool revocable, const Deadline& deadline) {
  MutexLock lock(&mu_);
  // A reader in another thread files what arrives anyway; a broken connection surfaces below, after what is queued.
  if (revocable && !reading_ && !broken_) read_and_file(Deadline::passed(), /*all_there=*/true);
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
    if (broken_) return *broken_;
    if (deadline.expired()) {
      return Error(ErrorCode::kDeadlineExceeded, "no batch of stream " + std::to_string(stream_id) +
                                                     " arrived within the timeout; the stream goes on");
    }
    wait_or_read(deadline);
  }
}

Result<Received> ClientCore::next_worker_event(const Deadline& deadline) {
  MutexLock lock(&mu_);
  for (;;) {
    if (!worker_events_.empty()) {
      Received r = std::move(worker_events_.front());
      worker_events_.pop_front();
      return r;
    }
    if (broken_) return *broken_;
    if (deadline.expired()) return Error(ErrorCode::kDeadlineExceeded, "no worker event within the timeout");
    wait_or_read(deadline);
  }
}

void ClientCore::forget_stream(uint64_t stream_id) {
  MutexLock lock(&mu_);
  events_.erase(stream_id);
  closed_streams_.insert(stream_id);
}

}  // namespace batchd::detail
