#include "workers/worker_pool.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <utility>

#include "workers/worker_process.h"

namespace batchd::daemon {

Result<std::unique_ptr<WorkerPool>> WorkerPool::start(boost::asio::io_context& io, const Options& options,
                                                      const DatasetRegistry& datasets) {
  std::unique_ptr<WorkerPool> pool(new WorkerPool(io, options, datasets));
  pool->workers_.resize(options.count);
  for (auto& worker : pool->workers_) {
    auto page = ProgressPage::create();
    if (!page.ok()) return page.error();
    worker.progress.emplace(std::move(page).value());
    worker.watchdog = std::make_unique<boost::asio::steady_timer>(io);
  }
  for (size_t w = 0; w < options.count; ++w) {
    if (auto st = pool->spawn(w); !st.ok()) return st.error();
  }
  return pool;
}

WorkerPool::~WorkerPool() {
  stop();
  wait_stopped(options_.exit_grace + std::chrono::seconds(1));
}

Status WorkerPool::spawn(size_t w) {
  Worker& worker = workers_[w];
  auto forked = fork_worker(w, datasets_, options_.max_frame_bytes, worker.progress->get(), options_.faults,
                            options_.cache);
  if (!forked.ok()) return forked.error();
  const pid_t pid = forked->pid;
  worker.pid = pid;
  // Every handler checks that the slot still runs this process: a retired worker's late events are dropped.
  WorkerChannel::Handlers handlers{
      [this, w, pid](const std::string& payload) {
        if (!stopped_ && workers_[w].pid == pid) handle_frame(w, payload);
      },
      [this, w, pid](const std::string& why) {
        if (!stopped_ && workers_[w].pid == pid) on_death(w, why);
      }};
  worker.channel = WorkerChannel::create(io_, std::move(forked->channel), options_.max_frame_bytes, std::move(handlers));
  worker.task.reset();
  worker.streams.clear();
  worker.started = std::chrono::steady_clock::now();
  worker.busy = {};
  worker.restart_pending = false;  // a fresh fork of the daemon as it is now
  spdlog::info("worker {} started (pid {})", w, worker.pid);
  if (events_ != nullptr) worker.channel->start();
  return ok_status();
}

void WorkerPool::serve(WorkerEvents& events) {
  events_ = &events;
  for (auto& worker : workers_) {
    if (worker.channel) worker.channel->start();
  }
}

void WorkerPool::handle_frame(size_t w, const std::string& payload) {
  Worker& worker = workers_[w];
  wire::WorkerDone done;
  if (auto st = wire::parse_payload(payload, &done, "WorkerDone"); !st.ok()) {
    spdlog::error("worker {} (pid {}): {}", w, worker.pid, st.error().message());
    return;
  }
  if (!worker.task || worker.task->sequence() != done.sequence() || worker.task->stream_id() != done.stream_id() ||
      worker.task->begin() != done.begin()) {
    spdlog::error("worker {} (pid {}) answered a task it was not given (stream {}, batch {})", w, worker.pid,
                  done.stream_id(), done.sequence());
    return;
  }
  Task task = std::move(*worker.task);
  worker.task.reset();
  worker.watchdog->cancel();
  const auto took = std::chrono::steady_clock::now() - worker.task_started;
  worker.busy += took;
  // What the watchdog's budget must cover (docs/reliability.md measures the defaults from these lines).
  spdlog::trace("worker {} answered a task of {} samples in {:.3f} ms ({:.3f} ms per sample; budget {} ms)", w,
                task.samples(), std::chrono::duration<double, std::milli>(took).count(),
                std::chrono::duration<double, std::milli>(took).count() / std::max<uint32_t>(1, task.samples()),
                options_.timeouts.budget(task.samples()).count());
  ++worker.batches_done;
  if (worker.restart_pending) replace(w);  // before on_done can give it the next batch
  events_->on_task_done(w, done, std::move(task));
}

void WorkerPool::retire(size_t w, int signal, std::chrono::milliseconds grace, ChildReaper::OnExit on_exit) {
  Worker& worker = workers_[w];
  if (worker.channel) {
    worker.channel->close();  // EOF: a healthy worker exits by itself
    worker.channel.reset();
  }
  worker.watchdog->cancel();
  const pid_t pid = std::exchange(worker.pid, -1);
  if (pid <= 0) return;
  // Once it is reaped (it can write nothing more), the cache entry it was filling, if any, is dropped: it would
  // never be committed (and is never read: sample_cache.h).
  reaper_.end(pid, signal, grace, "worker " + std::to_string(w) + " (pid " + std::to_string(pid) + ")",
              [cache = options_.cache, pid, on_exit = std::move(on_exit)](int status) {
                if (cache != nullptr) {
                  if (const uint64_t bytes = cache->reclaim_filler(pid); bytes > 0) {
                    spdlog::info("worker (pid {}) ended while filling a cache entry: its {} bytes were dropped", pid,
                                 bytes);
                  }
                }
                if (on_exit) on_exit(status);
              });
}

void WorkerPool::on_death(size_t w, const std::string& why) {
  Worker& worker = workers_[w];
  const int64_t on_sample = sample_on_page(w);  // read now: the replacement shares the page
  std::optional<Task> lost = std::move(worker.task);
  worker.task.reset();
  ++worker.restarts;
  const pid_t pid = worker.pid;
  // A worker whose channel broke is of no further use. Whether to blame the sample depends on how it died, known
  // once it is reaped; its task comes back then. The replacement runs meanwhile.
  retire(w, SIGKILL, std::chrono::milliseconds(0),
         [this, w, pid, why, on_sample, lost = std::move(lost)](int status) mutable {
           const std::string cause = describe_exit(status);
           const int64_t culprit = died_of_crash(status) ? on_sample : -1;
           spdlog::warn("worker {} (pid {}) died ({}; {}){}; a replacement was started", w, pid, cause, why,
                        lost ? " while making " + describe_task(*lost) +
                                   (culprit >= 0 ? ", on sample " + std::to_string(culprit) : "")
                             : "");
           if (stopped_ || !lost) return;
           events_->on_task_lost(w, std::move(*lost), TaskLoss{culprit, cause, false});
         });
  respawn(w);
  if (workers_[w].pid > 0 && !workers_[w].task) events_->on_worker_ready(w);
}

void WorkerPool::on_timeout(size_t w) {
  Worker& worker = workers_[w];
  const int64_t on_sample = sample_on_page(w);
  Task lost = std::move(*worker.task);
  worker.task.reset();
  ++worker.restarts;
  const double budget = std::chrono::duration<double>(options_.timeouts.budget(lost.samples())).count();
  const std::string cause = fmt::format("no answer within {:.1f} s, the deadline of a task of {} samples "
                                        "(daemon.task_timeout_min_s, daemon.per_sample_timeout_ms): killed by the "
                                        "watchdog", budget, lost.samples());
  spdlog::warn("worker {} (pid {}) is past the deadline of its task ({:.1f} s) making {}, {}; killing it (SIGKILL), "
               "starting a replacement and redoing the task",
               w, worker.pid, budget, describe_task(lost),
               on_sample >= 0 ? "on sample " + std::to_string(on_sample) : std::string("not on any sample"));
  // SIGKILL is final (the process never runs again), so the task can be redone at once; the reaper collects it.
  retire(w, SIGKILL, std::chrono::milliseconds(0), {});
  respawn(w);
  events_->on_task_lost(w, std::move(lost), TaskLoss{on_sample, cause, true});
  if (workers_[w].pid > 0 && !workers_[w].task) events_->on_worker_ready(w);
}

void WorkerPool::respawn(size_t w) {
  if (stopped_) return;
  if (auto st = spawn(w); st.ok()) return;
  else spdlog::error("cannot start worker {}: {}; retrying in 1 s", w, st.error().message());
  Worker& worker = workers_[w];
  worker.pid = -1;
  if (!worker.retry) worker.retry = std::make_unique<boost::asio::steady_timer>(io_);
  worker.retry->expires_after(std::chrono::seconds(1));
  worker.retry->async_wait([this, w](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    respawn(w);
    if (workers_[w].pid > 0) events_->on_worker_ready(w);
  });
}

void WorkerPool::send(size_t w, const google::protobuf::MessageLite& command, int fd) {
  Worker& worker = workers_[w];
  if (auto st = worker.channel->send(command, fd); !st.ok()) {
    // The command cannot reach the worker, so its state is unknown: end it (its EOF redoes the task).
    spdlog::error("worker {} (pid {}): {}; replacing it", w, worker.pid, st.error().message());
    ::kill(worker.pid, SIGKILL);
  }
}

void WorkerPool::restart_all() {
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].pid <= 0) continue;
    workers_[w].restart_pending = true;
    if (!workers_[w].task) replace(w);
  }
}

void WorkerPool::replace(size_t w) {
  const pid_t old = workers_[w].pid;
  retire(w, SIGTERM, options_.exit_grace, [w, old](int status) {
    spdlog::info("worker {} (pid {}) replaced to hold the datasets loaded since it forked ({})", w, old, describe_exit(status));
  });
  respawn(w);
}

std::optional<size_t> WorkerPool::idle_worker() const {
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].pid > 0 && !workers_[w].task) return w;
  }
  return std::nullopt;
}

void WorkerPool::assign(size_t w, Task task, const wire::WorkerAttach& attach, int segment_fd) {
  Worker& worker = workers_[w];
  const uint64_t stream_id = task.stream_id();
  const auto now = std::chrono::steady_clock::now();
  task.deadline = options_.timeouts.deadline(now, task.samples());
  wire::WorkerCommand command;
  *command.mutable_task() = task.work;
  worker.task = std::move(task);  // recorded first: if the worker is gone, its death handler redoes it
  worker.task_started = now;
  const uint64_t assignment = ++worker.assignments;
  worker.watchdog->expires_at(worker.task->deadline);
  worker.watchdog->async_wait([this, w, pid = worker.pid, assignment](const boost::system::error_code& ec) {
    if (ec || stopped_ || workers_[w].pid != pid || workers_[w].assignments != assignment || !workers_[w].task) return;
    on_timeout(w);
  });
  if (!worker.streams.count(stream_id)) {
    wire::WorkerCommand attach_command;
    *attach_command.mutable_attach() = attach;
    send(w, attach_command, segment_fd);
    worker.streams.insert(stream_id);
  }
  send(w, command);
}

void WorkerPool::detach_stream(uint64_t stream_id) {
  for (size_t w = 0; w < workers_.size(); ++w) {
    Worker& worker = workers_[w];
    if (worker.pid > 0 && worker.task && worker.task->stream_id() == stream_id) {
      // A closed stream's task is waste, maybe long (a heavy spec): SIGKILL (final) and a fresh worker; the task
      // goes with its stream, never reported lost (a cache entry it was filling is reclaimed as for any death).
      spdlog::info("worker {} (pid {}): stream {} closed during {}; replacing the worker", w, worker.pid, stream_id,
                   describe_task(*worker.task));
      worker.task.reset();
      retire(w, SIGKILL, std::chrono::milliseconds(0), {});
      respawn(w);
      boost::asio::post(io_, [this, w] {  // once the close has returned: never re-entered
        if (!stopped_ && events_ != nullptr && workers_[w].pid > 0 && !workers_[w].task) events_->on_worker_ready(w);
      });
      continue;  // the replacement knows no stream
    }
    if (worker.pid > 0 && worker.streams.erase(stream_id)) {
      wire::WorkerCommand command;
      command.mutable_detach()->set_stream_id(stream_id);
      send(w, command);
    }
  }
}

void WorkerPool::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (size_t w = 0; w < workers_.size(); ++w) {
    workers_[w].retry.reset();
    retire(w, SIGTERM, options_.exit_grace, {});
  }
}

void WorkerPool::wait_stopped(std::chrono::milliseconds bound) { reaper_.wait(bound); }

}  // namespace batchd::daemon
