// worker_pool.h — the daemon's persistent worker processes, seen from the main process.
//
// start() forks the workers at daemon start-up, before any thread exists (fork in a threaded process is unsafe),
// after the datasets are loaded so the workers share those pages copy-on-write. Each worker talks to the main
// process over its own socketpair with the same length-prefixed protobuf frames as clients use.
//
// serve() starts reading the channels and reporting to a WorkerEvents (the StreamManager): the pool is forked first
// (before threads and before the manager exists), then served. A worker whose channel reaches EOF has died
// (SIGKILL, crash in a decoder, OOM): it is reaped, a replacement is forked at once, and on_task_lost() hands back
// the task it was running so the caller can redo it; on_worker_ready() says the replacement runs. Workers are
// generic: any stream's task can go to any worker; a worker is told about a stream (WorkerAttach + segment fd) the
// first time it gets one of its tasks.
//
// Not thread-safe: used from the daemon's single io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "batchd.pb.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"
#include "data/dataset.h"
#include "workers/worker_progress.h"
#include "workers/workers.h"

namespace batchd::daemon {

class WorkerPool final : public Workers {
 public:
  // Forks `count` workers. Must be called before the process creates any thread (the io_context itself creates
  // none). `crash_on_sample` >= 0 is fault injection for tests (--fault-crash-on-sample): workers crash on that
  // sample.
  static Result<std::unique_ptr<WorkerPool>> start(boost::asio::io_context& io, size_t count,
                                                   const DatasetRegistry& datasets, uint32_t max_frame_bytes,
                                                   int64_t crash_on_sample = -1);

  ~WorkerPool() override;  // stops the workers (see stop())

  // Starts reading the workers' channels on the io_context; events go to `events`, which must outlive the pool's
  // service (until stop()). Called once.
  void serve(WorkerEvents& events);

  // Workers. A send failure in assign() means the worker is gone: it is killed and replaced, and its task comes
  // back through on_task_lost.
  std::optional<size_t> idle_worker() const override;
  void assign(size_t w, Task task, const wire::WorkerAttach& attach, int segment_fd) override;
  void detach_stream(uint64_t stream_id) override;
  std::vector<wire::WorkerInfo> describe() const override;

  // Replaces every worker with a fresh fork of the daemon as it is now (after a reload: with the new datasets).
  // Idle workers are replaced at once, busy ones as soon as their batch is done: nothing is lost or redone.
  void restart_all();

  // SIGTERM to every worker, then SIGKILL after `grace`; reaps them all. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  size_t size() const override { return workers_.size(); }

 private:
  struct Worker {
    pid_t pid = -1;
    std::unique_ptr<boost::asio::posix::stream_descriptor> channel;
    wire::FrameDecoder decoder;
    std::vector<char> read_buffer;
    std::optional<Task> task;  // in flight
    std::set<uint64_t> streams;            // attached
    uint64_t batches_done = 0;
    uint64_t restarts = 0;
    std::unique_ptr<boost::asio::steady_timer> retry;
    std::optional<ProgressPage> progress;  // shared with every process of this slot
    std::chrono::steady_clock::time_point started, task_started;
    std::chrono::steady_clock::duration busy{};
    bool restart_pending = false;
  };
  void replace(size_t w);  // planned replacement of an idle worker

  WorkerPool(boost::asio::io_context& io, const DatasetRegistry& datasets, uint32_t max_frame_bytes)
      : datasets_(datasets), max_frame_bytes_(max_frame_bytes), io_(io) {}
  Status spawn(size_t w);  // forks worker slot w (fresh channel)
  void respawn(size_t w);  // spawn, retried every second while fork/socketpair fail
  void read_some(size_t w);
  void on_readable(size_t w, size_t bytes);
  void handle_frame(size_t w, const std::string& payload);
  void on_death(size_t w, const std::string& why);
  bool send(size_t w, const google::protobuf::MessageLite& command, int fd = -1);

  const DatasetRegistry& datasets_;
  uint32_t max_frame_bytes_;
  boost::asio::io_context& io_;
  WorkerEvents* events_ = nullptr;  // set by serve()
  std::vector<Worker> workers_;
  int64_t crash_on_sample_ = -1;
  bool stopped_ = false;
};

}  // namespace batchd::daemon
