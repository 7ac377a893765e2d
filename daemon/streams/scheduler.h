// scheduler.h — which task runs on which worker: the scheduling policy between the streams and the worker pool.
//
// Policy: round-robin over the streams, one task a turn: the next idle worker goes to the first stream after the
// last one served that has a task. Which of its tasks is the stream's own choice (Stream::next_task): a redo first
// (a worker died making it, or one of its samples was bad and was replaced), oldest first; then a chunk of a batch
// it already claimed; then the first chunk of a new batch if a slot is free. A redo therefore keeps priority
// within its own stream only and takes that stream's turn: while k streams have tasks, each gets one assignment in
// k, whether its tasks are new or redone. A stream that fails sample after sample (on_error=skip over a long run
// of bad samples) or loses worker after worker cannot hold the workers, and a stream with a free slot is never
// starved by another's backlog. One task per idle worker; pump() fills every idle worker it can.
//
// Per-uid share of the shared pool: while k uids have running streams on it, each uid holds at most
// max(1, ceil(W / k)) of its W workers at once (all W when alone), and a uid at its share is skipped in the
// round-robin even when the others have nothing to do just now: otherwise one user's tasks (a heavy client spec,
// many streams) could hold every worker the moment another user's stream needs one, and that stream would wait
// for as long as those tasks run. A user alone on the daemon has every worker.
//
// A stream of a trainer's own Dataset (OpenStream.external) is added with its own pool (its attached workers,
// workers/attached_workers.h): its tasks go to those workers only, and the shared pool never serves it.
//
// The Scheduler does not own the streams: StreamManager adds each stream when it is opened and removes it before
// destroying it (remove() also detaches it from the workers).
//
// Not thread-safe: the daemon's io_context thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "streams/stream.h"
#include "base/task.h"
#include "workers/workers.h"

namespace batchd::daemon {

class Scheduler final {
 public:
  explicit Scheduler(Workers& workers) : workers_(workers) {}

  // `own`: the stream's own workers (an external dataset's attached workers), or null for the shared pool.
  void add(Stream* stream, Workers* own = nullptr);
  // Forgets the stream (its queued redos go with it) and detaches it from the workers.
  void remove(uint64_t stream_id);
  // Assigns tasks to idle workers until no worker is idle or no stream has a task, in the shared pool and in each
  // stream's own.
  void pump();
  // Runs after each pump() (not re-entered): the StreamManager delivers the failure of a stream whose task was
  // refused at hand-out (a remote task that can never run), which no worker event would deliver.
  void set_after_pump(std::function<void()> after) { after_pump_ = std::move(after); }

  Workers& workers() { return workers_; }
  const Workers& workers() const { return workers_; }

 private:
  void assign(Workers& pool, size_t w, Task task, const Stream& stream);

  Workers& workers_;
  std::map<uint64_t, Stream*> streams_;  // by id: the round-robin order (the shared pool's streams)
  std::map<uint64_t, std::pair<Stream*, Workers*>> own_;  // streams with their own workers
  std::map<size_t, uint32_t> holders_;  // shared worker -> uid of the stream whose task it runs
  uint64_t last_served_ = 0;
  std::function<void()> after_pump_;
  bool in_after_pump_ = false;
  void pump_once();
};

}  // namespace batchd::daemon
