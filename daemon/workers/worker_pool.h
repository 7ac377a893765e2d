// worker_pool.h — the daemon's persistent worker processes, seen from the main process.
//
// start() forks the workers at daemon start-up, before any thread exists (fork in a threaded process is unsafe),
// after the datasets are loaded so the workers share those pages copy-on-write. Each worker talks to the main
// process over its own socketpair with the same length-prefixed protobuf frames as clients use.
//
// A worker whose channel reaches EOF has died (SIGKILL, crash in a decoder, OOM): it is reaped, a replacement is
// forked at once and on_lost() hands back the task it was running so the caller can redo it. Workers are generic:
// any stream's batch can go to any worker; a worker is told about a stream (WorkerAttach + segment fd) the first
// time it gets one of its tasks.
//
// Not thread-safe: used from the daemon's single io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "batchd.pb.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"
#include "data/dataset.h"
#include "workers/worker_progress.h"

namespace batchd::daemon {

class WorkerPool final {
 public:
  struct Callbacks {
    // A worker finished `task` (successfully or with done.error).
    std::function<void(const wire::WorkerDone& done, wire::WorkerTask task)> on_done;
    // A worker died; `task` is what it was running (if anything), to be redone elsewhere. `culprit` is the sample
    // it was on when it died (-1 if none or unknown); `cause` says how it died ("killed by signal ...").
    std::function<void(std::optional<wire::WorkerTask> task, int64_t culprit, const std::string& cause)> on_lost;
  };

  // Forks `count` workers and starts reading their channels on `io`. Must be called before the process creates
  // any thread (the io_context itself creates none).
  // `crash_on_sample` >= 0 is fault injection for tests (--fault-crash-on-sample): workers crash on that sample.
  static Result<std::unique_ptr<WorkerPool>> start(boost::asio::io_context& io, size_t count,
                                                   const DatasetRegistry& datasets, uint32_t max_frame_bytes,
                                                   Callbacks callbacks, int64_t crash_on_sample = -1);

  ~WorkerPool();  // stops the workers (see stop())

  // An idle worker's slot number, if any.
  std::optional<size_t> idle_worker() const;

  // Sends `task` to worker `w` (idle), preceded by `attach` + `segment_fd` if the worker does not know the stream.
  // A send failure means the worker is gone; its death is handled when its channel reports EOF.
  void assign(size_t w, const wire::WorkerTask& task, const wire::WorkerAttach& attach, int segment_fd);

  // Replaces every worker with a fresh fork of the daemon as it is now (after a reload: with the new datasets).
  // Idle workers are replaced at once, busy ones as soon as their batch is done: nothing is lost or redone.
  void restart_all();

  // Tells every worker that knows `stream_id` to unmap it.
  void detach_stream(uint64_t stream_id);

  // SIGTERM to every worker, then SIGKILL after `grace`; reaps them all. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  std::vector<wire::WorkerInfo> describe() const;
  size_t size() const { return workers_.size(); }

 private:
  struct Worker {
    pid_t pid = -1;
    std::unique_ptr<boost::asio::posix::stream_descriptor> channel;
    wire::FrameDecoder decoder;
    std::vector<char> read_buffer;
    std::optional<wire::WorkerTask> task;  // in flight
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

  WorkerPool(boost::asio::io_context& io, const DatasetRegistry& datasets, uint32_t max_frame_bytes,
             Callbacks callbacks)
      : datasets_(datasets), max_frame_bytes_(max_frame_bytes), io_(io), callbacks_(std::move(callbacks)) {}
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
  Callbacks callbacks_;
  std::vector<Worker> workers_;
  int64_t crash_on_sample_ = -1;
  bool stopped_ = false;
};

}  // namespace batchd::daemon
