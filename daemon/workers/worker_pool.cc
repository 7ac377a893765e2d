#include "workers/worker_pool.h"

#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <thread>

#include "batchd/wire/fd_passing.h"
#include "workers/worker_process.h"

namespace batchd::daemon {

Result<std::unique_ptr<WorkerPool>> WorkerPool::start(boost::asio::io_context& io, size_t count,
                                                      const DatasetRegistry& datasets, uint32_t max_frame_bytes,
                                                      int64_t crash_on_sample) {
  std::unique_ptr<WorkerPool> pool(new WorkerPool(io, datasets, max_frame_bytes));
  pool->crash_on_sample_ = crash_on_sample;
  pool->workers_.resize(count);
  for (auto& worker : pool->workers_) {
    auto page = ProgressPage::create();
    if (!page.ok()) return page.error();
    worker.progress.emplace(std::move(page).value());
  }
  for (size_t w = 0; w < count; ++w) {
    if (auto st = pool->spawn(w); !st.ok()) return st.error();
  }
  return pool;
}

WorkerPool::~WorkerPool() { stop(); }

Status WorkerPool::spawn(size_t w) {
  Worker& worker = workers_[w];
  auto forked = fork_worker(w, datasets_, max_frame_bytes_, worker.progress->get(), crash_on_sample_);
  if (!forked.ok()) return forked.error();
  worker.pid = forked->pid;
  worker.channel = std::make_unique<boost::asio::posix::stream_descriptor>(io_, forked->channel.release());
  worker.decoder = wire::FrameDecoder(max_frame_bytes_);
  worker.read_buffer.resize(1 << 16);
  worker.task.reset();
  worker.streams.clear();
  worker.started = std::chrono::steady_clock::now();
  worker.busy = {};
  spdlog::info("worker {} started (pid {})", w, worker.pid);
  if (events_ != nullptr) read_some(w);
  return ok_status();
}

void WorkerPool::serve(WorkerEvents& events) {
  events_ = &events;
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].pid > 0) read_some(w);
  }
}

void WorkerPool::read_some(size_t w) {
  Worker& worker = workers_[w];
  worker.channel->async_read_some(boost::asio::buffer(worker.read_buffer),
                                  [this, w, pid = worker.pid](const boost::system::error_code& ec, size_t n) {
                                    if (stopped_ || workers_[w].pid != pid) return;
                                    if (ec) return on_death(w, ec == boost::asio::error::eof ? "channel closed"
                                                                                             : ec.message());
                                    on_readable(w, n);
                                  });
}

void WorkerPool::on_readable(size_t w, size_t bytes) {
  Worker& worker = workers_[w];
  const pid_t pid = worker.pid;
  worker.decoder.feed(worker.read_buffer.data(), bytes);
  std::string payload;
  for (;;) {
    auto more = worker.decoder.next(&payload);
    if (!more.ok()) return on_death(w, more.error().message());
    if (!*more) break;
    handle_frame(w, payload);
    // Stopped, or replaced after a reload (the replacement's read is already armed by spawn()).
    if (stopped_ || worker.pid != pid) return;
  }
  read_some(w);
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
  worker.busy += std::chrono::steady_clock::now() - worker.task_started;
  ++worker.batches_done;
  if (worker.restart_pending) replace(w);  // before on_done can give it the next batch
  events_->on_task_done(w, done, std::move(task));
}

void WorkerPool::on_death(size_t w, const std::string& why) {
  Worker& worker = workers_[w];
  ::kill(worker.pid, SIGKILL);  // a worker whose channel broke is of no further use
  const int status = reap(worker.pid);
  // Which sample was it on? Only trusted if the progress page describes the task it was given.
  const WorkerProgress* p = worker.progress->get();
  int64_t culprit = -1;
  if (died_of_crash(status) && worker.task && p->stream_id.load() == worker.task->stream_id() &&
      p->sequence.load() == worker.task->sequence() && p->begin.load() == worker.task->begin()) {
    culprit = p->sample.load();
  }
  const std::string cause = describe_exit(status);
  spdlog::warn("worker {} (pid {}) died ({}; {}){}; starting a replacement", w, worker.pid, cause, why,
               worker.task ? " while making batch " + std::to_string(worker.task->work.batch()) + " of stream " +
                                 std::to_string(worker.task->stream_id()) +
                                 (culprit >= 0 ? ", on sample " + std::to_string(culprit) : "")
                           : "");
  std::optional<Task> lost = std::move(worker.task);
  worker.task.reset();
  worker.channel.reset();
  ++worker.restarts;
  respawn(w);
  if (lost) events_->on_task_lost(w, std::move(*lost), culprit, cause);
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

bool WorkerPool::send(size_t w, const google::protobuf::MessageLite& command, int fd) {
  auto frame = wire::encode_frame(command, max_frame_bytes_);
  if (!frame.ok()) {
    spdlog::error("worker {}: {}", w, frame.error().message());
    return false;
  }
  const int sock = workers_[w].channel->native_handle();
  const char* p = frame->data();
  size_t left = frame->size();
  while (left > 0) {  // the channel is non-blocking (asio); wait for room when the worker's buffer is full
    auto n = wire::send_some(sock, p, left, fd);
    if (!n.ok()) return false;
    if (*n == wire::kWouldBlock) {
      pollfd pfd{sock, POLLOUT, 0};
      if (::poll(&pfd, 1, 1000) <= 0) return false;
      continue;
    }
    fd = -1;
    p += *n;
    left -= *n;
  }
  return true;
}

void WorkerPool::restart_all() {
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].pid <= 0) continue;
    workers_[w].restart_pending = true;
    if (!workers_[w].task) replace(w);
  }
}

void WorkerPool::replace(size_t w) {
  Worker& worker = workers_[w];
  worker.restart_pending = false;
  const pid_t old = worker.pid;
  worker.channel.reset();  // EOF: the worker exits by itself
  ::kill(old, SIGTERM);
  reap(old);
  spdlog::info("worker {} (pid {}) replaced after a reload", w, old);
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
  wire::WorkerCommand command;
  *command.mutable_task() = task.work;
  worker.task = std::move(task);  // recorded first: if the send fails, the death handler redoes it
  worker.task_started = std::chrono::steady_clock::now();
  bool sent = true;
  if (!worker.streams.count(stream_id)) {
    wire::WorkerCommand attach_command;
    *attach_command.mutable_attach() = attach;
    sent = send(w, attach_command, segment_fd);
    worker.streams.insert(stream_id);
  }
  if (sent) sent = send(w, command);
  // A half-sent command leaves the channel unusable: replace the worker (its EOF redoes the task).
  if (!sent) ::kill(worker.pid, SIGKILL);
}

void WorkerPool::detach_stream(uint64_t stream_id) {
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].pid > 0 && workers_[w].streams.erase(stream_id)) {
      wire::WorkerCommand command;
      command.mutable_detach()->set_stream_id(stream_id);
      send(w, command);
    }
  }
}

void WorkerPool::stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  for (auto& worker : workers_) {
    worker.retry.reset();
    worker.channel.reset();  // EOF on the channel: the worker exits by itself
    if (worker.pid > 0) ::kill(worker.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (auto& worker : workers_) {
    if (worker.pid <= 0) continue;
    int status = 0;
    for (;;) {
      const pid_t r = ::waitpid(worker.pid, &status, WNOHANG);
      if (r == worker.pid || (r < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(worker.pid, SIGKILL);
        ::waitpid(worker.pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    worker.pid = -1;
  }
}

std::vector<wire::WorkerInfo> WorkerPool::describe() const {
  std::vector<wire::WorkerInfo> out;
  for (const auto& worker : workers_) {
    wire::WorkerInfo info;
    info.set_pid(worker.pid);
    info.set_state(worker.pid <= 0 ? "down" : worker.task ? "busy" : "idle");
    info.set_batches_done(worker.batches_done);
    info.set_restarts(worker.restarts);
    const auto now = std::chrono::steady_clock::now();
    const auto busy = worker.busy + (worker.task ? now - worker.task_started : std::chrono::steady_clock::duration{});
    info.set_busy_seconds(std::chrono::duration<double>(busy).count());
    info.set_alive_seconds(worker.pid > 0 ? std::chrono::duration<double>(now - worker.started).count() : 0.0);
    out.push_back(info);
  }
  return out;
}

}  // namespace batchd::daemon
