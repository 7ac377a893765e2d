// frame_queue.h — frames waiting to be written to a non-blocking socket, in order; an fd may ride on a frame's
// first byte (SCM_RIGHTS).
//
// write_to() sends as much as the socket takes now and keeps the rest, so a writer never waits for its peer: on
// "full" it waits for the socket to be writable (asio's wait_write) and calls write_to() again. Used for the
// daemon's channels to its workers (daemon/workers/worker_channel.h) and its client connections (server/connection.h).
//
// Not thread-safe. Move-only (it owns the fds of queued frames, closed once sent or on clear()).
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::wire {

class FrameQueue final {
 public:
  // Queues an encoded frame; `fd` (if valid) is sent with its first byte, then closed.
  void push(std::string frame, UniqueFd fd = UniqueFd());

  // Writes queued bytes to `socket` until the queue is empty (true) or the socket is full (false). An error means
  // the peer is gone (or the socket is broken); the queue is left as it was at the failure.
  Result<bool> write_to(int socket);

  bool empty() const { return frames_.empty(); }
  size_t bytes() const { return bytes_; }  // unsent bytes of queued frames (whole frames, as queued)
  void clear();

 private:
  struct Frame {
    std::string bytes;
    UniqueFd fd;
    size_t sent = 0;
  };
  std::deque<Frame> frames_;
  size_t bytes_ = 0;
};

}  // namespace batchd::wire
