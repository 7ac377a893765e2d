// workers.h — the boundary between scheduling (streams/) and the worker processes (workers/), in both directions.
//
//   Workers       what the scheduler asks of the pool: an idle worker, run this task there, forget a stream.
//                 WorkerPool implements it with forked processes; unit tests with a fake pool
//                 (tests/unit/daemon/streams/fake_workers.h).
//   WorkerEvents  what the pool reports: a task done, a task lost with its worker, a worker ready for work.
//                 StreamManager implements it.
//
// Both are called on the daemon's io_context thread only. An event handler may call back into Workers (assign
// the next task) before it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "base/task.h"

namespace batchd::daemon {

class Workers {
 public:
  virtual ~Workers() = default;

  // A worker that runs no task, if any (the lowest number).
  virtual std::optional<size_t> idle_worker() const = 0;
  // Whether worker `w` runs a task now.
  virtual bool busy(size_t w) const = 0;
  // Runs `task` on idle worker `w` (the pool stamps its deadline). The first task of a stream on a worker is
  // preceded by `attach` and the stream's segment fd (the worker maps it once). Never waits for the worker. A
  // worker that cannot be reached, or is past the task's deadline, is replaced: its task comes back through
  // WorkerEvents::on_task_lost.
  virtual void assign(size_t w, Task task, const wire::WorkerAttach& attach, int segment_fd) = 0;
  // Every worker that knows the stream unmaps its segment (the stream is closed); a worker still making one of its
  // tasks is ended and replaced (the task is dropped, not reported lost): a closed stream holds no worker.
  virtual void detach_stream(uint64_t stream_id) = 0;
  // One row per worker, for status.
  virtual std::vector<wire::WorkerInfo> describe() const = 0;
  // The number of workers (W), busy, idle or being replaced.
  virtual size_t size() const = 0;

  // A pool that routes (an ExternalDataset.round_robin stream's AttachedWorkers) takes every task its stream hands
  // out (queue(), whatever its workers' state) and runs each on the worker the task's sequence names, in sequence
  // order (run_queued(): the scheduler calls it after queueing). The others never see queue() nor run_queued().
  virtual bool routes() const { return false; }
  virtual void queue(Task) {}
  virtual void run_queued() {}
};

class WorkerEvents {
 public:
  virtual ~WorkerEvents() = default;

  // Worker `w` finished `task`: successfully, or with done.error (done.sample_failed: one sample was bad).
  virtual void on_task_done(size_t w, const wire::WorkerDone& done, Task task) = 0;
  // Worker `w` died while it ran `task`, or the watchdog killed it past the task's deadline (loss.timed_out);
  // loss.culprit is the sample on its progress page when a crash signal of its own or the watchdog ended it (-1:
  // none, or killed from outside), loss.cause says how it ended ("killed by signal Killed"). A replacement for
  // slot `w` was forked already (on_worker_ready(w) says when it may take work, if it is not busy by then).
  virtual void on_task_lost(size_t w, Task task, const TaskLoss& loss) = 0;
  // Worker `w` is running and idle: a replacement after a death, or after a failed fork was retried.
  virtual void on_worker_ready(size_t w) = 0;
};

}  // namespace batchd::daemon
