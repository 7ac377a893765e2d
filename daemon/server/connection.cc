#include "server/connection.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>

#include "batchd/wire/convert.h"
#include "batchd/wire/fd_passing.h"
#include "server/enum_check.h"
#include "server/server.h"

namespace batchd::daemon {

Connection::Connection(boost::asio::local::stream_protocol::socket socket, uint64_t id, Server& server,
                       StreamManager& streams, const Limits& limits, PeerCredentials credentials, bool admin)
    : socket_(std::move(socket)),
      server_(server),
      streams_(streams),
      max_reply_bytes_(limits.max_frame_bytes),
      frame_timeout_(limits.frame_timeout_ms),
      credentials_(std::move(credentials)),
      admin_(admin),
      decoder_(limits.max_request_bytes, "limits.max_request_bytes"),
      frame_deadline_(socket_.get_executor()) {
  peer_.connection_id = id;
  peer_.pid = credentials_.pid;
  peer_.uid = credentials_.uid;
  peer_.admin = admin;
}

Connection::~Connection() = default;

void Connection::start() {
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  spdlog::info("connection {} from {}{}", peer_.connection_id, credentials_.describe(), admin_ ? " (admin)" : "");
  read();
}

void Connection::read() {
  if (closing_ || reading_ || read_paused_) return;
  reading_ = true;
  socket_.async_wait(boost::asio::socket_base::wait_read,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                       self->reading_ = false;
                       if (self->closed_) return;
                       if (ec) return self->close(true);
                       self->on_readable();
                     });
}

void Connection::on_readable() {
  // Into the server's one scratch buffer: an idle connection holds no read buffer of its own.
  std::vector<char>& buffer = server_.read_buffer();
  const ssize_t n = ::recv(socket_.native_handle(), buffer.data(), buffer.size(), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return read();
  if (n <= 0) {
    if (n == 0 && decoder_.buffered() > 0) {
      spdlog::warn("connection {}: client closed mid-frame ({} bytes of a truncated frame)", peer_.connection_id,
                   decoder_.buffered());
    }
    return close(true);
  }
  decoder_.feed(buffer.data(), static_cast<size_t>(n));
  process();
}

void Connection::process() {
  std::string payload;
  while (!closing_) {
    // Back-pressure, checked before every frame: a client that sends requests but does not read its replies is
    // neither served nor read from until it does (flush() resumes).
    if (queue_.bytes() > kMaxQueuedBytes) {
      read_paused_ = true;
      deadline_armed_ = false;
      frame_deadline_.cancel();
      return;
    }
    auto more = decoder_.next(&payload);
    if (!more.ok()) return protocol_error(0, more.error());
    if (!*more) break;
    ++frames_done_;
    handle(payload);
  }
  if (closing_) return;
  arm_frame_deadline();
  read();
}

void Connection::handle(const std::string& payload) {
  wire::Request request;
  if (auto st = wire::parse_payload(payload, &request, "request"); !st.ok()) return protocol_error(0, st.error());
  if (auto st = check_enums(request); !st.ok()) {
    // An attached worker's undeclared value: its connection ends, its task is redone now (not at the watchdog).
    if (attached_stream_ != 0) return protocol_error(request.request_id(), st.error());
    spdlog::debug("connection {} ({}): request {} refused: {}", peer_.connection_id, credentials_.describe(),
                  request.request_id(), st.error().message());
    return reply_error(request.request_id(), st.error());
  }
  try {
    dispatch(request);
  } catch (const std::exception& e) {  // e.g. bad_alloc: fail this request, keep serving
    spdlog::error("connection {}: request {} failed: {}", peer_.connection_id, request.request_id(), e.what());
    reply_error(request.request_id(), Error(ErrorCode::kInternal, std::string("request failed: ") + e.what()));
  }
}

// A frame partly buffered must be complete within frame_timeout_ from its first byte read (while not paused).
void Connection::arm_frame_deadline() {
  if (decoder_.buffered() == 0) {
    if (deadline_armed_) frame_deadline_.cancel();
    deadline_armed_ = false;
    return;
  }
  if (deadline_armed_ && armed_for_ == frames_done_) return;  // still the same frame
  deadline_armed_ = true;
  armed_for_ = frames_done_;
  frame_deadline_.expires_after(frame_timeout_);  // cancels the wait for an earlier frame
  frame_deadline_.async_wait([self = shared_from_this(), frame = frames_done_](const boost::system::error_code& ec) {
    if (ec || self->closed_ || !self->deadline_armed_ || self->armed_for_ != frame) return;
    if (self->frames_done_ == frame) self->on_frame_deadline();
  });
}

void Connection::on_frame_deadline() {
  protocol_error(
      0, Error(ErrorCode::kProtocol, "a request frame was still incomplete " + std::to_string(frame_timeout_.count()) +
                                         " ms after its first byte (" + std::to_string(decoder_.buffered()) +
                                         " bytes received; limits.frame_timeout_ms): send each request whole"));
}

void Connection::send_event(const wire::Reply& event) { reply(0, event); }

void Connection::reply(uint64_t request_id, wire::Reply r, wire::UniqueFd fd) {
  if (closed_) return;
  r.set_request_id(request_id);
  auto frame = wire::encode_frame(r, max_reply_bytes_);
  if (!frame.ok()) {
    spdlog::error("connection {}: {}", peer_.connection_id, frame.error().message());
    // A status too large for the frame (its pages are bounded, but not the workers and datasets in each) gets an
    // Error that says why instead of a connection closed in silence.
    if (r.has_status()) {
      return reply_error(request_id, Error(ErrorCode::kResourceExhausted,
                                           "the reply to this request would be " + std::to_string(r.ByteSizeLong()) +
                                               " bytes, over the daemon's frame limit (limits.max_frame_bytes = " +
                                               std::to_string(max_reply_bytes_) + "): raise the key in its config"));
    }
    return close(true);
  }
  queue_.push(std::move(frame).value(), std::move(fd));
  flush();
}

void Connection::reply_error(uint64_t request_id, const Error& error) {
  wire::Reply r;
  *r.mutable_error() = wire::to_wire(error);
  reply(request_id, std::move(r));
}

void Connection::protocol_error(uint64_t request_id, const Error& error) {
  spdlog::warn("connection {} ({}): {}; closing this connection", peer_.connection_id, credentials_.describe(),
               error.message());
  reply_error(request_id, Error(ErrorCode::kProtocol, error.message() + "; the daemon closed this connection"));
  close(false);
}

void Connection::flush() {
  if (!queue_.empty() && !waiting_to_write_ && !closed_) {
    auto all_sent = queue_.write_to(socket_.native_handle());
    if (!all_sent.ok()) return close(true);  // the client is gone
    if (!*all_sent) {
      waiting_to_write_ = true;
      socket_.async_wait(boost::asio::socket_base::wait_write,
                         [self = shared_from_this()](const boost::system::error_code& ec) {
                           self->waiting_to_write_ = false;
                           if (ec) return self->close(true);
                           self->flush();
                         });
      return;
    }
  }
  if (queue_.empty() && closing_) return finish();
  if (read_paused_ && queue_.bytes() <= kMaxQueuedBytes / 2 && !closed_) {
    read_paused_ = false;
    // Not from inside flush(): process() dispatches, and dispatching replies, which flushes.
    boost::asio::post(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->closed_ && !self->read_paused_) self->process();
    });
  }
}

void Connection::close(bool now) {
  if (closed_) return;
  const bool was_closing = std::exchange(closing_, true);
  if (now || queue_.empty()) return finish();
  if (!was_closing) {
    // The last frames (e.g. the Error saying why) get frame_timeout_ to be read; a client that reads nothing does
    // not keep the connection, and what it holds, any longer.
    deadline_armed_ = false;
    frame_deadline_.expires_after(frame_timeout_);
    frame_deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec && !self->closed_) self->finish();
    });
  }
  flush();
}

void Connection::finish() {
  if (closed_) return;
  closed_ = true;
  frame_deadline_.cancel();
  boost::system::error_code ec;
  socket_.shutdown(boost::asio::socket_base::shutdown_both, ec);
  socket_.close(ec);
  queue_.clear();
  // Reclaiming runs as its own event: finish() can be reached from inside StreamManager (a failed send_event),
  // which must not see its streams erased under its feet.
  boost::asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->streams_.close_all_of(self->peer_.connection_id);
    spdlog::info("connection {} ({}) closed", self->peer_.connection_id, self->credentials_.describe());
    self->server_.remove(self->peer_.connection_id);
  });
}

}  // namespace batchd::daemon
