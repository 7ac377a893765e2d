#include "batchd/wire/frame_queue.h"

#include "batchd/wire/fd_passing.h"

namespace batchd::wire {

void FrameQueue::push(std::string frame, UniqueFd fd) {
  bytes_ += frame.size();
  frames_.push_back(Frame{std::move(frame), std::move(fd), 0});
}

Result<bool> FrameQueue::write_to(int socket) {
  while (!frames_.empty()) {
    Frame& f = frames_.front();
    auto n = send_some(socket, f.bytes.data() + f.sent, f.bytes.size() - f.sent, f.sent == 0 ? f.fd.get() : -1);
    if (!n.ok()) return n.error();
    if (*n == kWouldBlock) return false;
    f.sent += *n;
    f.fd.reset();  // sent with the first byte
    if (f.sent == f.bytes.size()) {
      bytes_ -= f.bytes.size();
      frames_.pop_front();
    }
  }
  return true;
}

void FrameQueue::clear() {
  frames_.clear();
  bytes_ = 0;
}

}  // namespace batchd::wire
