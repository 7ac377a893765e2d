#include "streams/scheduler.h"

namespace batchd::daemon {

void Scheduler::add(Stream* stream) { streams_[stream->id()] = stream; }

void Scheduler::remove(uint64_t stream_id) {
  if (streams_.erase(stream_id) == 0) return;
  workers_.detach_stream(stream_id);
}

void Scheduler::assign(size_t w, Task task, const Stream& stream) {
  workers_.assign(w, std::move(task), stream.attach(), stream.segment_fd());
}

void Scheduler::pump() {
  while (auto w = workers_.idle_worker()) {
    // Round-robin: the first stream after the last one served that has a task.
    auto it = streams_.upper_bound(last_served_);
    std::optional<Task> task;
    const Stream* served = nullptr;
    for (size_t i = 0; i < streams_.size() && !task; ++i, ++it) {
      if (it == streams_.end()) it = streams_.begin();
      task = it->second->next_task();
      served = it->second;
    }
    if (!task) return;
    last_served_ = served->id();
    assign(*w, std::move(*task), *served);
  }
}

}  // namespace batchd::daemon
