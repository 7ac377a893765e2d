#include "server/connection.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>

#include "batchd/wire/convert.h"
#include "batchd/wire/fd_passing.h"
#include "server/server.h"

namespace batchd::daemon {

Connection::Connection(boost::asio::local::stream_protocol::socket socket, uint64_t id, Server& server,
                       StreamManager& streams, uint32_t max_frame_bytes)
    : socket_(std::move(socket)),
      server_(server),
      streams_(streams),
      max_frame_bytes_(max_frame_bytes),
      decoder_(max_frame_bytes),
      read_buffer_(1 << 16) {
  peer_.connection_id = id;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    peer_.pid = cred.pid;
    peer_.uid = cred.uid;
  }
}

Connection::~Connection() = default;

void Connection::start() {
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  spdlog::info("connection {} from pid {} uid {}", peer_.connection_id, peer_.pid, peer_.uid);
  read();
}

void Connection::read() {
  if (closing_) return;
  socket_.async_read_some(boost::asio::buffer(read_buffer_),
                          [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                            if (self->closed_) return;
                            if (ec) {
                              if (self->decoder_.buffered() > 0 && ec == boost::asio::error::eof) {
                                spdlog::warn("connection {}: client closed mid-frame ({} bytes of a truncated "
                                             "frame)", self->peer_.connection_id, self->decoder_.buffered());
                              }
                              return self->close(true);
                            }
                            self->on_read(n);
                          });
}

void Connection::on_read(size_t bytes) {
  decoder_.feed(read_buffer_.data(), bytes);
  std::string payload;
  while (!closing_) {
    auto more = decoder_.next(&payload);
    if (!more.ok()) return protocol_error(0, more.error());
    if (!*more) break;
    wire::Request request;
    if (auto st = wire::parse_payload(payload, &request, "request"); !st.ok()) return protocol_error(0, st.error());
    try {
      dispatch(request);
    } catch (const std::exception& e) {  // e.g. bad_alloc: fail this request, keep serving
      spdlog::error("connection {}: request {} failed: {}", peer_.connection_id, request.request_id(), e.what());
      reply_error(request.request_id(), Error(ErrorCode::kInternal, std::string("request failed: ") + e.what()));
    }
  }
  // Back-pressure: a client that sends requests but does not read its replies is not read from until it does.
  if (queued_bytes_ > kMaxQueuedBytes) {
    read_paused_ = true;
    return;
  }
  read();
}

void Connection::dispatch(const wire::Request& request) {
  const uint64_t rid = request.request_id();
  switch (request.body_case()) {
    case wire::Request::kOpenStream: {
      auto opened = streams_.open(request.open_stream(), peer_, this);
      if (!opened.ok()) return reply_error(rid, opened.error());
      wire::Reply r;
      *r.mutable_stream_opened() = opened->reply;
      return reply(rid, std::move(r), std::move(opened->client_fd));
    }
    case wire::Request::kCloseStream: {
      const uint64_t id = request.close_stream().stream_id();
      if (auto st = streams_.close(id, peer_.connection_id); !st.ok()) return reply_error(rid, st.error());
      wire::Reply r;
      r.set_stream_closed(id);
      return reply(rid, std::move(r));
    }
    case wire::Request::kRelease: {
      const auto& rel = request.release();
      if (auto st = streams_.release(rel.stream_id(), rel.sequence(), peer_.connection_id); !st.ok()) {
        return protocol_error(rid, st.error());
      }
      return;
    }
    case wire::Request::kDrain: {
      streams_.set_draining(true);
      spdlog::info("drain requested by pid {} uid {}: refusing new streams", peer_.pid, peer_.uid);
      wire::Reply r;
      r.set_ack("draining: new streams are refused, running streams continue");
      return reply(rid, std::move(r));
    }
    case wire::Request::kShutdown: {
      spdlog::info("shutdown requested by pid {} uid {}", peer_.pid, peer_.uid);
      wire::Reply r;
      r.set_ack("shutting down: running streams are failed with \"daemon shutting down\", then the daemon exits");
      reply(rid, std::move(r));
      server_.request_shutdown();
      return;
    }
    case wire::Request::kStatus: {
      wire::Reply r;
      server_.fill_status(r.mutable_status());
      return reply(rid, std::move(r));
    }
    default:
      return protocol_error(rid, Error(ErrorCode::kProtocol, "request " + std::to_string(rid) +
                                                                 " has an unknown or empty body (field " +
                                                                 std::to_string(request.body_case()) +
                                                                 "); is the client newer than the daemon?"));
  }
}

void Connection::send_event(const wire::Reply& event) { reply(0, event); }

void Connection::reply(uint64_t request_id, wire::Reply r, wire::UniqueFd fd) {
  if (closed_) return;
  r.set_request_id(request_id);
  auto frame = wire::encode_frame(r, max_frame_bytes_);
  if (!frame.ok()) {
    spdlog::error("connection {}: {}", peer_.connection_id, frame.error().message());
    return close(true);
  }
  queued_bytes_ += frame->size();
  queue_.push_back(Outgoing{std::move(frame).value(), std::move(fd), 0});
  flush();
}

void Connection::reply_error(uint64_t request_id, const Error& error) {
  wire::Reply r;
  *r.mutable_error() = wire::to_wire(error);
  reply(request_id, std::move(r));
}

void Connection::protocol_error(uint64_t request_id, const Error& error) {
  spdlog::warn("connection {} (pid {}): {}; closing this connection", peer_.connection_id, peer_.pid,
               error.message());
  reply_error(request_id, Error(ErrorCode::kProtocol, error.message() + "; the daemon closed this connection"));
  close(false);
}

void Connection::flush() {
  while (!queue_.empty() && !waiting_to_write_ && !closed_) {
    Outgoing& out = queue_.front();
    auto n = wire::send_some(socket_.native_handle(), out.frame.data() + out.sent, out.frame.size() - out.sent,
                             out.sent == 0 ? out.fd.get() : -1);
    if (!n.ok()) return close(true);  // the client is gone
    if (*n == wire::kWouldBlock) {
      waiting_to_write_ = true;
      socket_.async_wait(boost::asio::socket_base::wait_write,
                         [self = shared_from_this()](const boost::system::error_code& ec) {
                           self->waiting_to_write_ = false;
                           if (ec) return self->close(true);
                           self->flush();
                         });
      return;
    }
    out.sent += *n;
    out.fd.reset();
    if (out.sent == out.frame.size()) {
      queued_bytes_ -= out.frame.size();
      queue_.pop_front();
    }
  }
  if (queue_.empty() && closing_) return finish();
  if (read_paused_ && queued_bytes_ <= kMaxQueuedBytes / 2 && !closed_) {
    read_paused_ = false;
    read();
  }
}

void Connection::close(bool now) {
  if (closed_) return;
  closing_ = true;
  if (now || queue_.empty()) return finish();
  flush();
}

void Connection::finish() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  socket_.shutdown(boost::asio::socket_base::shutdown_both, ec);
  socket_.close(ec);
  queue_.clear();
  // Reclaiming runs as its own event: finish() can be reached from inside StreamManager (a failed send_event),
  // which must not see its streams erased under its feet.
  boost::asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->streams_.close_all_of(self->peer_.connection_id);
    spdlog::info("connection {} (pid {}) closed", self->peer_.connection_id, self->peer_.pid);
    self->server_.remove(self->peer_.connection_id);
  });
}

}  // namespace batchd::daemon
