#include "workers/worker_channel.h"

#include <fcntl.h>
#include <google/protobuf/message_lite.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>

namespace batchd::daemon {

std::shared_ptr<WorkerChannel> WorkerChannel::create(boost::asio::io_context& io, wire::UniqueFd socket,
                                                     uint32_t max_frame_bytes, Handlers handlers) {
  return std::shared_ptr<WorkerChannel>(new WorkerChannel(io, std::move(socket), max_frame_bytes, std::move(handlers)));
}

WorkerChannel::WorkerChannel(boost::asio::io_context& io, wire::UniqueFd socket, uint32_t max_frame_bytes,
                             Handlers handlers)
    : socket_(io, socket.release()),
      max_frame_bytes_(max_frame_bytes),
      handlers_(std::move(handlers)),
      decoder_(max_frame_bytes),
      read_buffer_(1 << 16) {
  socket_.non_blocking(true);
}

WorkerChannel::~WorkerChannel() { close(); }

void WorkerChannel::start() { read_some(); }

void WorkerChannel::close() {
  closed_ = true;
  queue_.clear();
  boost::system::error_code ec;
  socket_.close(ec);  // pending operations complete with operation_aborted; their handlers see closed_
}

void WorkerChannel::broken(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  // Posted: broken() can be reached from send(), whose caller must not be re-entered.
  boost::asio::post(socket_.get_executor(), [self = shared_from_this(), why] {
    if (self->handlers_.on_broken) self->handlers_.on_broken(why);
  });
}

void WorkerChannel::read_some() {
  socket_.async_read_some(boost::asio::buffer(read_buffer_),
                          [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                            if (self->closed_) return;
                            if (ec) return self->broken(ec == boost::asio::error::eof ? "channel closed" : ec.message());
                            self->decoder_.feed(self->read_buffer_.data(), n);
                            std::string payload;
                            for (;;) {
                              auto more = self->decoder_.next(&payload);
                              if (!more.ok()) return self->broken(more.error().message());
                              if (!*more) break;
                              self->handlers_.on_frame(payload);
                              if (self->closed_) return;  // the handler closed or replaced the worker
                            }
                            self->read_some();
                          });
}

Status WorkerChannel::send(const google::protobuf::MessageLite& message, int fd) {
  if (closed_) return ok_status();  // being replaced: its death handler redoes the task
  auto frame = wire::encode_frame(message, max_frame_bytes_);
  if (!frame.ok()) return frame.error();
  wire::UniqueFd copy;
  if (fd >= 0) {
    copy.reset(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!copy.valid()) return posix_error("duplicating a segment fd for a worker", errno);
  }
  queue_.push(std::move(frame).value(), std::move(copy));
  flush();
  return ok_status();
}

void WorkerChannel::flush() {
  if (waiting_to_write_ || closed_) return;
  auto all = queue_.write_to(socket_.native_handle());
  if (!all.ok()) return broken(all.error().message());
  if (*all) return;
  // The worker is not reading: wait for room, never for the worker.
  waiting_to_write_ = true;
  socket_.async_wait(boost::asio::posix::stream_descriptor::wait_write,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                       self->waiting_to_write_ = false;
                       if (self->closed_) return;
                       if (ec) return self->broken(ec.message());
                       self->flush();
                     });
}

}  // namespace batchd::daemon
