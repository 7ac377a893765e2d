// worker_pool.h — the daemon's persistent worker processes, seen from the main process.
//
// start() forks the workers at daemon start-up, before any thread exists (fork in a threaded process is unsafe),
// after the datasets are loaded so the workers share those pages copy-on-write. Each worker talks to the main
// process over its own socketpair (WorkerChannel: the same length-prefixed protobuf frames as clients use, written
// without blocking).
//
// serve() starts reading the channels and reporting to a WorkerEvents (the StreamManager): the pool is forked first
// (before threads and before the manager exists), then served. Workers are generic: any stream's task can go to any
// worker; a worker is told about a stream (WorkerAttach + segment fd) the first time it gets one of its tasks.
//
// The event loop never waits for a worker. Whenever a worker process is done with — it died (its channel reached
// EOF: SIGKILL, a crash in a decoder, the OOM killer), the watchdog killed it, or a reload replaces it — a
// replacement is forked into its slot at once and the old process is handed to a ChildReaper (child_reaper.h),
// which reaps it without blocking and SIGKILLs it if it has not exited within exit_grace (a stopped worker).
// on_task_lost() hands back the task the worker was running so the caller can redo it; on_worker_ready() says the
// replacement may take work.
//
// Watchdog: assign() stamps the task's deadline, now + timeouts.budget(its samples) (task.h), and arms the slot's
// timer. A worker still on the task at the deadline (stopped, hung on a sample or a file) is SIGKILLed, logged with
// its stream, batch, the task's samples and the sample on its progress page, and the task is lost with
// TaskLoss::timed_out and that sample as culprit.
//
// Not thread-safe: used from the daemon's single io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "batchd.pb.h"
#include "data/dataset.h"
#include "base/task.h"
#include "transforms/presets/pipeline.h"
#include "workers/child_reaper.h"
#include "workers/worker_channel.h"
#include "workers/worker_progress.h"
#include "workers/workers.h"

namespace batchd::daemon {

class WorkerPool final : public Workers {
 public:
  struct Options {
    size_t count = 1;                                  // worker slots (W)
    uint32_t max_frame_bytes = 1u << 20;               // bound on one frame on a channel
    TaskTimeouts timeouts;                             // the watchdog's budget per task (daemon.task_timeout_*)
    std::chrono::milliseconds exit_grace{5000};        // SIGTERM (or EOF) to SIGKILL for a worker being retired
    FaultInjection faults;                             // tests only (--fault-crash-on-sample, --fault-hang-...)
    // The daemon's sample cache (cache.max_bytes), mapped before the fork so every worker shares it; null: none.
    // A worker that dies has its half-written entries dropped (SampleCache::reclaim_filler).
    SampleCache* cache = nullptr;
  };

  // Forks `options.count` workers. Must be called before the process creates any thread (the io_context itself
  // creates none).
  static Result<std::unique_ptr<WorkerPool>> start(boost::asio::io_context& io, const Options& options,
                                                   const DatasetRegistry& datasets);

  ~WorkerPool() override;  // stop(), then waits for the workers at most exit_grace + 1 s (wait_stopped())

  // Starts reading the workers' channels on the io_context; events go to `events`, which must outlive the pool's
  // service (until stop()). Called once.
  void serve(WorkerEvents& events);

  // Workers. assign() never blocks: a worker that does not read its channel just does not answer, and the
  // watchdog ends it at the task's deadline.
  std::optional<size_t> idle_worker() const override;
  bool busy(size_t w) const override { return w < workers_.size() && workers_[w].task.has_value(); }
  void assign(size_t w, Task task, const wire::WorkerAttach& attach, int segment_fd) override;
  void detach_stream(uint64_t stream_id) override;
  std::vector<wire::WorkerInfo> describe() const override;
  size_t size() const override { return workers_.size(); }

  // Replaces every worker with a fresh fork of the daemon as it is now (after a reload: with the new datasets).
  // Idle workers are replaced at once (the old process gets EOF and SIGTERM, and SIGKILL after exit_grace), busy
  // ones as soon as their task is done or the watchdog ends it: nothing is lost or redone. Never waits.
  void restart_all();

  // Shutdown, in two steps. stop(): no event is reported any more; every worker's channel is closed (it exits by
  // itself) and it gets SIGTERM, SIGKILL after exit_grace; returns at once (the event loop may still run).
  // wait_stopped(): after the event loop, reaps them, waiting at most `bound`. Both idempotent.
  void stop();
  void wait_stopped(std::chrono::milliseconds bound);

  // Worker processes retired but not reaped yet (for tests and status).
  size_t retiring() const { return reaper_.pending(); }

 private:
  struct Worker {
    pid_t pid = -1;
    std::shared_ptr<WorkerChannel> channel;
    std::optional<Task> task;    // in flight
    std::set<uint64_t> streams;  // attached
    uint64_t batches_done = 0;
    uint64_t restarts = 0;
    uint64_t assignments = 0;    // tells the watchdog's timer which task it was armed for
    std::unique_ptr<boost::asio::steady_timer> retry, watchdog;
    std::optional<ProgressPage> progress;  // shared with every process of this slot
    std::chrono::steady_clock::time_point started, task_started;
    std::chrono::steady_clock::duration busy{};
    bool restart_pending = false;
  };

  WorkerPool(boost::asio::io_context& io, const Options& options, const DatasetRegistry& datasets)
      : options_(options), datasets_(datasets), io_(io), reaper_(io) {}
  Status spawn(size_t w);  // forks worker slot w (fresh channel)
  void respawn(size_t w);  // spawn, retried every second while fork/socketpair fail
  // The slot's process is done with: its channel closes, the reaper ends it (`signal` now, SIGKILL after `grace`)
  // and runs on_exit when it is gone; the slot is empty (pid -1) until respawn().
  void retire(size_t w, int signal, std::chrono::milliseconds grace, ChildReaper::OnExit on_exit);
  void handle_frame(size_t w, const std::string& payload);
  void on_death(size_t w, const std::string& why);  // the channel broke
  void on_timeout(size_t w);                        // the watchdog fired
  void replace(size_t w);                           // planned replacement of an idle worker (reload)
  // The sample on slot w's progress page if the page describes the task it runs, else -1.
  int64_t sample_on_page(size_t w) const;
  void send(size_t w, const google::protobuf::MessageLite& command, int fd = -1);
  std::string describe_task(const Task& task) const;

  Options options_;
  const DatasetRegistry& datasets_;
  boost::asio::io_context& io_;
  WorkerEvents* events_ = nullptr;  // set by serve()
  std::vector<Worker> workers_;
  ChildReaper reaper_;
  bool stopped_ = false;
};

}  // namespace batchd::daemon
