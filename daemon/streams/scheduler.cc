#include "streams/scheduler.h"

#include <vector>

namespace batchd::daemon {

void Scheduler::add(Stream* stream, Workers* own) {
  if (own != nullptr) {
    own_[stream->id()] = {stream, own};
  } else {
    streams_[stream->id()] = stream;
  }
}

void Scheduler::remove(uint64_t stream_id) {
  if (auto it = own_.find(stream_id); it != own_.end()) {
    Workers* own = it->second.second;
    own_.erase(it);
    own->detach_stream(stream_id);
    return;
  }
  if (streams_.erase(stream_id) == 0) return;
  workers_.detach_stream(stream_id);
}

void Scheduler::assign(Workers& pool, size_t w, Task task, const Stream& stream) {
  pool.assign(w, std::move(task), stream.attach(), stream.segment_fd());
}

void Scheduler::pump() {
  pump_once();
  if (after_pump_ && !in_after_pump_) {
    in_after_pump_ = true;
    after_pump_();
    in_after_pump_ = false;
  }
}

void Scheduler::pump_once() {
  // A stream's own workers serve it alone. Assigning can report a lost task (a worker gone), which may pump again
  // and change own_: iterate over a copy of the ids.
  std::vector<uint64_t> owned;
  for (const auto& [id, entry] : own_) owned.push_back(id);
  for (uint64_t id : owned) {
    for (auto it = own_.find(id); it != own_.end(); it = own_.find(id)) {
      auto [stream, pool] = it->second;
      auto w = pool->idle_worker();
      if (!w) break;
      auto task = stream->next_task();
      if (!task) break;
      assign(*pool, *w, std::move(*task), *stream);
    }
  }
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
    assign(workers_, *w, std::move(*task), *served);
  }
}

}  // namespace batchd::daemon
