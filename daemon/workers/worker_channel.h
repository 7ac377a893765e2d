// worker_channel.h — the daemon's end of one worker's socketpair: frames in, frames out, never waiting.
//
// send() queues a frame (a WorkerCommand; an attach's segment fd is duplicated and rides on the frame's first byte
// as SCM_RIGHTS) and writes what the socket takes at once; the rest is written when the socket has room again
// (asio's wait_write; wire::FrameQueue). A worker that stops reading (SIGSTOP, a hang)
// therefore only fills its socket buffer and this queue: the event loop never waits for it, and the pool's
// watchdog deals with the worker. The queue holds at most the worker's one task plus the attach/detach frames of
// the streams it knows, a few KiB per stream.
//
// Incoming bytes are decoded into frames (WorkerDone payloads) for on_frame. EOF (the worker died), a read or
// write error, or a malformed frame goes to on_broken, once, and never from inside send(): it is posted to the
// io_context, so a caller of send() is never re-entered.
//
// close() closes the socket (the worker reads EOF and exits) and no handler runs after it. The channel is held by
// shared_ptr: its pending operations keep it alive until they have completed.
//
// Not thread-safe: the daemon's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "batchd/result.h"
#include "batchd/wire/frame_queue.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"

namespace google::protobuf {
class MessageLite;
}

namespace batchd::daemon {

class WorkerChannel final : public std::enable_shared_from_this<WorkerChannel> {
 public:
  struct Handlers {
    std::function<void(const std::string& payload)> on_frame;
    std::function<void(const std::string& why)> on_broken;
  };

  static std::shared_ptr<WorkerChannel> create(boost::asio::io_context& io, wire::UniqueFd socket,
                                               uint32_t max_frame_bytes, Handlers handlers);
  ~WorkerChannel();

  // Starts reading (called once).
  void start();
  // Queues `message` (and a duplicate of `fd`, if >= 0) and writes what the socket takes now. An encoding error or
  // a failed dup is returned (nothing queued); a broken socket is reported through on_broken.
  Status send(const google::protobuf::MessageLite& message, int fd = -1);
  void close();

  size_t queued_bytes() const { return queue_.bytes(); }

 private:
  WorkerChannel(boost::asio::io_context& io, wire::UniqueFd socket, uint32_t max_frame_bytes, Handlers handlers);
  void read_some();
  void flush();
  void broken(const std::string& why);

  boost::asio::posix::stream_descriptor socket_;
  uint32_t max_frame_bytes_;
  Handlers handlers_;
  wire::FrameDecoder decoder_;
  std::vector<char> read_buffer_;
  wire::FrameQueue queue_;
  bool waiting_to_write_ = false;
  bool closed_ = false;  // close() was called or the channel broke: no handler runs any more
};

}  // namespace batchd::daemon
