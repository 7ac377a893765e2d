// scheduler.h — which task runs on which worker: the scheduling policy between the streams and the worker pool.
//
// Policy: tasks to redo (a worker died making them, or a bad sample was replaced) go first, oldest requeued last
// (a redo goes to the front); then new tasks round-robin over the streams: the first stream after the last one
// served that has a task (a chunk of a batch it already claimed, or a free slot and batches left), one chunk a
// turn. One task per idle worker; pump() fills every idle worker
// it can. A stream with a free slot is therefore never starved by another's backlog.
//
// The Scheduler does not own the streams: StreamManager adds each stream when it is opened and removes it before
// destroying it (remove() also drops its queued tasks and detaches it from the workers).
//
// Not thread-safe: the daemon's io_context thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>

#include "streams/stream.h"
#include "streams/task.h"
#include "workers/workers.h"

namespace batchd::daemon {

class Scheduler final {
 public:
  explicit Scheduler(Workers& workers) : workers_(workers) {}

  void add(Stream* stream);
  void remove(uint64_t stream_id);
  // `task` is made again before any new task (its stream must still be added).
  void requeue(Task task);
  // Assigns tasks to idle workers until no worker is idle or no stream has a task.
  void pump();

  size_t queued() const { return redo_.size(); }
  Workers& workers() { return workers_; }
  const Workers& workers() const { return workers_; }

 private:
  void assign(size_t w, Task task, const Stream& stream);

  Workers& workers_;
  std::map<uint64_t, Stream*> streams_;  // by id: the round-robin order
  std::deque<Task> redo_;
  uint64_t last_served_ = 0;
};

}  // namespace batchd::daemon
