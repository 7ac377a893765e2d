#include "streams/scheduler.h"

#include <algorithm>
#include <set>
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
      if (pool->routes()) {  // each task waits for the worker it names (workers.h)
        // A stream that failed or stopped runs nothing more: its queued tasks wait for its close (which drops them).
        if (!stream->running()) break;
        while (auto task = stream->next_task()) pool->queue(std::move(*task));
        pool->run_queued();
        break;
      }
      auto w = pool->idle_worker();
      if (!w) break;
      auto task = stream->next_task();
      if (!task) break;
      assign(*pool, *w, std::move(*task), *stream);
    }
  }
  // The per-uid share (scheduler.h): who holds the busy workers, and how many each uid may hold.
  std::erase_if(holders_, [this](const auto& held) { return !workers_.busy(held.first); });
  std::set<uint32_t> uids;
  for (const auto& [id, stream] : streams_) {
    if (stream->running()) uids.insert(stream->owner().uid);
  }
  const size_t all = workers_.size(), k = std::max<size_t>(uids.size(), 1);
  const size_t share = std::max<size_t>(1, (all + k - 1) / k);
  std::map<uint32_t, size_t> held;
  for (const auto& [w, uid] : holders_) ++held[uid];
  while (auto w = workers_.idle_worker()) {
    // Round-robin: the first stream after the last one served that has a task and whose uid is under its share.
    auto it = streams_.upper_bound(last_served_);
    std::optional<Task> task;
    const Stream* served = nullptr;
    for (size_t i = 0; i < streams_.size() && !task; ++i, ++it) {
      if (it == streams_.end()) it = streams_.begin();
      if (held[it->second->owner().uid] >= share) continue;
      task = it->second->next_task();
      served = it->second;
    }
    if (!task) return;
    last_served_ = served->id();
    holders_[*w] = served->owner().uid;
    ++held[served->owner().uid];
    assign(workers_, *w, std::move(*task), *served);
  }
}

}  // namespace batchd::daemon
