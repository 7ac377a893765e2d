// attached_workers.h — the worker processes a trainer attached to one of its own streams (a Python Dataset's
// workers, started by batchd.Loader under the trainer's uid), seen from the daemon as a Workers pool of that stream.
//
// The daemon never runs the trainer's code and cannot signal its processes: each attached worker is a client
// connection (WorkerLink) that sent AttachWorker. The stream's tasks go only to its own attached workers (the
// Scheduler routes them: scheduler.h); the daemon's forked workers never see an external stream. The protocol is the
// forked workers' (WorkerTask out, WorkerDone in), over the connection, and so is the recovery:
//   - a worker whose connection closes (it exited, crashed, or was killed) loses its task: it comes back through
//     WorkerEvents::on_task_lost, with the sample on its progress page as culprit (the daemon cannot see how another
//     uid's process ended, so any death on a sample blames it: ErrorPolicy poisons a sample after two);
//   - a worker past its task's deadline (TaskTimeouts, the daemon's watchdog keys) is detached: WorkerDetach with
//     must_exit (the worker's client library exits on it, and the trainer's Loader starts a replacement), the
//     connection closed, the task lost with timed_out;
//   - a WorkerDone that does not answer the worker's task (another stream, sequence or begin; a failed sample
//     outside the task; bytes written outside the task's part of the slot, slot_extents.h) is a protocol error: the
//     worker is detached and its task redone;
//   - a WorkerDone's error is the worker's claim: a code that means something else to the trainer's client
//     (DEADLINE_EXCEEDED, UNAVAILABLE, RESOURCE_EXHAUSTED, PROTOCOL, PERMISSION_DENIED, unspecified, undeclared —
//     though the connection closes on an undeclared one first: connection.h) goes on as DATA_ERROR, with at most
//     4096 bytes of its message, cut at a character boundary (it stays valid UTF-8).
// A worker's slot number (0, 1, ...: chunks_by_worker's index) is reused by the next worker to attach; its progress
// page is not (each attachment gets a new one: a detached worker that still runs writes only its own).
//
// Round robin (ExternalDataset.round_robin, `route` workers): a worker attaches as number w < route (its Loader's
// worker id; one attaching as a number already attached replaces it, whose task is redone), and the task of
// sequence s is run by worker s % route alone, as DataLoader's in_order=True hands batch j to worker j % num_workers.
// The pool queues every task the stream hands out (routes()); a worker's queue waits, in sequence order, while it is
// busy, or not attached yet or again (a lost task goes back to the front of its worker's queue for the replacement).
//
// Not thread-safe: the daemon's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "base/task.h"
#include "workers/slot_extents.h"
#include "workers/worker_progress.h"
#include "workers/workers.h"

namespace batchd::daemon {

// The daemon's end of one attached worker's connection (server/connection.h implements it).
class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  virtual void send_task(const wire::WorkerTask& task) = 0;
  // Ends the attachment: sends `detach`, then closes the connection once it is written. The pool forgets the link
  // before calling this; the connection's later close is not reported (gone() finds nothing).
  virtual void end_attachment(const wire::WorkerDetach& detach) = 0;
};

class AttachedWorkers final : public Workers {
 public:
  // route: 0, any idle worker takes the next task; else the round-robin worker count (see the header).
  AttachedWorkers(boost::asio::io_context& io, uint64_t stream_id, uint32_t max_workers, TaskTimeouts timeouts,
                  WorkerEvents& events, uint32_t route = 0);
  ~AttachedWorkers() override;  // every link still attached is ended with reason "closed"
  // The stream's slot layout (its WorkerAttach: slot_stride, tensors), against which a done's written bytes are
  // checked (slot_extents.h); set once, before the first task.
  void set_slot_layout(const wire::WorkerAttach& attach) { extents_ = SlotExtents(attach); }

  struct Attached {
    uint32_t worker = 0;  // its slot number
    int progress_fd = -1; // its progress page (owned by the pool; dup it to send)
  };
  // kResourceExhausted naming limits.max_attached_workers when full; kInvalidArgument for a round-robin `worker`
  // out of range (ignored without round robin); kIo if its page cannot be made.
  Result<Attached> attach(WorkerLink* link, uint64_t connection_id, int32_t pid, uint32_t worker = 0);
  // The worker on `connection_id` answered. A mismatch ends it (see the header) and returns the reason.
  Status done(uint64_t connection_id, const wire::WorkerDone& done);
  // The worker's connection closed: its task (if any) is lost. Unknown connections are ignored.
  void gone(uint64_t connection_id);
  bool has(uint64_t connection_id) const { return find(connection_id) != nullptr; }
  size_t attached() const;
  uint64_t detached() const { return detached_; }

  // Workers.
  std::optional<size_t> idle_worker() const override;
  bool busy(size_t w) const override { return w < slots_.size() && slots_[w].task.has_value(); }
  void assign(size_t w, Task task, const wire::WorkerAttach& attach, int segment_fd) override;
  void detach_stream(uint64_t stream_id) override;  // ends every attachment ("closed")
  std::vector<wire::WorkerInfo> describe() const override;
  size_t size() const override { return slots_.size(); }
  bool routes() const override { return route_ > 0; }
  void queue(Task task) override;
  void run_queued() override;
  size_t queued() const;  // tasks waiting for their worker, all workers together

 private:
  struct Slot {
    WorkerLink* link = nullptr;  // null: free
    uint64_t connection_id = 0;
    int32_t pid = 0;
    std::optional<Task> task;
    std::optional<ProgressPage> progress;
    std::unique_ptr<boost::asio::steady_timer> watchdog;
    uint64_t assignments = 0, batches_done = 0;
    std::chrono::steady_clock::time_point started, task_started;
    std::chrono::steady_clock::duration busy{};
    std::deque<Task> queued;  // round robin: this worker's tasks not yet run, in sequence order
  };
  Slot* find(uint64_t connection_id);
  const Slot* find(uint64_t connection_id) const;
  size_t index(const Slot& slot) const { return static_cast<size_t>(&slot - slots_.data()); }
  // The sample on the slot's page if the page describes its task and names one of the task's samples, else -1.
  int64_t claimed_sample(const Slot& slot) const;
  // Ends the slot's attachment (must_exit unless `reason` is "closed") and frees it; returns its task.
  std::optional<Task> end(Slot& slot, const std::string& reason, bool must_exit);
  void on_timeout(size_t w);

  boost::asio::io_context& io_;
  uint64_t stream_id_;
  uint32_t max_workers_;
  uint32_t route_;
  TaskTimeouts timeouts_;
  WorkerEvents& events_;
  std::vector<Slot> slots_;
  uint64_t detached_ = 0;
  SlotExtents extents_;  // set_slot_layout(): until then no done without error is accepted
  // Expires with the pool: a watchdog wait that completed before the destruction (and so runs, cancelled or not)
  // sees it and does nothing.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
};

}  // namespace batchd::daemon
