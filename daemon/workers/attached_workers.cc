#include "workers/attached_workers.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "batchd/wire/utf8.h"

namespace batchd::daemon {

namespace {
constexpr size_t kMaxErrorBytes = 4096;  // of a worker's error message: what a status line and a log can carry

// The codes a worker may give a failed sample. The others mean something else to the trainer's client, which must
// not read them into a dataset's failure: DEADLINE_EXCEEDED is "no batch yet, wait again" to batchd.Loader (it would
// poll a failed stream forever), UNAVAILABLE "the daemon is gone", RESOURCE_EXHAUSTED "you hold too many batches".
bool is_dataset_error(int code) {
  return code == wire::DATA_ERROR || code == wire::IO || code == wire::NOT_FOUND || code == wire::INVALID_ARGUMENT ||
         code == wire::INTERNAL;
}
}  // namespace

AttachedWorkers::AttachedWorkers(boost::asio::io_context& io, uint64_t stream_id, uint32_t max_workers,
                                 TaskTimeouts timeouts, WorkerEvents& events, uint32_t route)
    : io_(io), stream_id_(stream_id), max_workers_(max_workers), route_(route), timeouts_(timeouts), events_(events) {
  // Timers' handlers hold a slot's index, never a pointer: the vector may grow (up to max_workers).
  slots_.reserve(std::min<uint32_t>(max_workers, 64));
  slots_.resize(route_);  // round robin: worker w is slot w
}

AttachedWorkers::~AttachedWorkers() { detach_stream(stream_id_); }

AttachedWorkers::Slot* AttachedWorkers::find(uint64_t connection_id) {
  for (auto& slot : slots_) {
    if (slot.link != nullptr && slot.connection_id == connection_id) return &slot;
  }
  return nullptr;
}

const AttachedWorkers::Slot* AttachedWorkers::find(uint64_t connection_id) const {
  return const_cast<AttachedWorkers*>(this)->find(connection_id);
}

size_t AttachedWorkers::attached() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.link; }));
}

Result<AttachedWorkers::Attached> AttachedWorkers::attach(WorkerLink* link, uint64_t connection_id, int32_t pid,
                                                          uint32_t worker) {
  auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.link == nullptr; });
  if (route_ > 0) {
    if (worker >= route_) {
      return Error(ErrorCode::kInvalidArgument,
                   "attach as worker " + std::to_string(worker) + " of stream " + std::to_string(stream_id_) +
                       ", which has " + std::to_string(route_) + " (ExternalDataset.workers): a worker number is "
                       "0 to workers - 1");
    }
    free = slots_.begin() + worker;
    if (free->link != nullptr) {  // its replacement came before its connection's close: the old one goes now
      spdlog::warn("stream {}: worker {} attached again (pid {}, was pid {}); ending the old attachment", stream_id_,
                   worker, pid, free->pid);
      ++detached_;
      std::optional<Task> lost = end(*free, "replaced: another process attached as worker " + std::to_string(worker),
                                     /*must_exit=*/true);
      if (lost) events_.on_task_lost(worker, std::move(*lost), TaskLoss{-1, "replaced by a new attachment", false});
    }
  } else if (free == slots_.end()) {
    if (slots_.size() >= max_workers_) {
      return Error(ErrorCode::kResourceExhausted,
                   "stream " + std::to_string(stream_id_) + " already has " + std::to_string(max_workers_) +
                       " attached workers (limits.max_attached_workers): use fewer workers (num_workers), or ask "
                       "the daemon's operator to raise the key");
    }
    slots_.emplace_back();
    free = std::prev(slots_.end());
  }
  // A page of its own, never the slot's last one: a worker detached from this slot may still run (its Loader ends
  // it) and write its old page, which must not pass for this worker's claim.
  auto page = ProgressPage::create_shared();
  if (!page.ok()) return page.error();
  free->progress.emplace(std::move(page).value());
  free->link = link;
  free->connection_id = connection_id;
  free->pid = pid;
  free->task.reset();
  free->started = std::chrono::steady_clock::now();
  free->busy = {};
  free->batches_done = 0;
  if (!free->watchdog) free->watchdog = std::make_unique<boost::asio::steady_timer>(io_);
  spdlog::info("stream {}: worker {} attached (pid {})", stream_id_, index(*free), pid);
  return Attached{static_cast<uint32_t>(index(*free)), free->progress->fd()};
}

int64_t AttachedWorkers::claimed_sample(const Slot& slot) const {
  if (!slot.task || !slot.progress) return -1;
  const WorkerProgress* p = slot.progress->get();
  if (p->stream_id.load() != slot.task->stream_id() || p->sequence.load() != slot.task->sequence() ||
      p->begin.load() != slot.task->begin()) {
    return -1;
  }
  const int64_t sample = p->sample.load();
  const auto& indices = slot.task->work.indices();
  return std::find(indices.begin(), indices.end(), sample) != indices.end() ? sample : -1;
}

std::optional<Task> AttachedWorkers::end(Slot& slot, const std::string& reason, bool must_exit) {
  WorkerLink* link = std::exchange(slot.link, nullptr);
  std::optional<Task> task = std::move(slot.task);
  slot.task.reset();
  if (slot.watchdog) slot.watchdog->cancel();
  ++slot.assignments;  // a timer already due finds another assignment
  if (link != nullptr) {
    wire::WorkerDetach detach;
    detach.set_stream_id(stream_id_);
    detach.set_reason(reason);
    detach.set_must_exit(must_exit);
    link->end_attachment(detach);
  }
  return task;
}

Status AttachedWorkers::done(uint64_t connection_id, const wire::WorkerDone& done) {
  Slot* slot = find(connection_id);
  if (slot == nullptr) return Error(ErrorCode::kProtocol, "worker_done from a connection that is not an attached worker");
  const size_t w = index(*slot);
  std::string mismatch;
  if (!slot->task) {
    mismatch = "it has no task";
  } else if (done.stream_id() != slot->task->stream_id() || done.sequence() != slot->task->sequence() ||
             done.begin() != slot->task->begin()) {
    mismatch = "it answers another task";
  } else if (done.has_error() && done.sample_failed()) {
    const auto& indices = slot->task->work.indices();
    if (std::find(indices.begin(), indices.end(), done.failed_sample()) == indices.end()) {
      mismatch = "its failed sample is not one of its task's";
    }
  } else if (!done.has_error()) {
    mismatch = extents_.check(done, slot->task->begin(), slot->task->end());
  }
  if (!mismatch.empty()) {
    const std::string why = "worker_done rejected: " + mismatch + " (a worker must answer its own task)";
    spdlog::warn("stream {}: worker {} (pid {}): {}; detaching it", stream_id_, w, slot->pid, why);
    ++detached_;
    std::optional<Task> lost = end(*slot, why, /*must_exit=*/true);
    if (lost) events_.on_task_lost(w, std::move(*lost), TaskLoss{-1, why, false});
    return Error(ErrorCode::kProtocol, why);
  }
  Task task = std::move(*slot->task);
  slot->task.reset();
  slot->watchdog->cancel();
  slot->busy += std::chrono::steady_clock::now() - slot->task_started;
  if (!done.has_error()) ++slot->batches_done;
  wire::WorkerDone answer = done;
  if (answer.has_error()) {  // from the trainer's process: bounded, and a data error, before it goes anywhere
    auto* error = answer.mutable_error();
    // At a character boundary: a cut inside one would make the trainer's StreamFailed unparseable (proto3 strings).
    if (error->message().size() > kMaxErrorBytes) {
      *error->mutable_message() = wire::bounded_utf8(error->message(), kMaxErrorBytes);
    }
    if (!is_dataset_error(error->code())) error->set_code(wire::DATA_ERROR);
  }
  events_.on_task_done(w, answer, std::move(task));
  return ok_status();
}

void AttachedWorkers::gone(uint64_t connection_id) {
  Slot* slot = find(connection_id);
  if (slot == nullptr) return;
  const size_t w = index(*slot);
  const int64_t culprit = claimed_sample(*slot);
  ++detached_;
  slot->link = nullptr;  // the connection is closing already: nothing to send
  std::optional<Task> lost = end(*slot, "", false);
  spdlog::warn("stream {}: attached worker {} (pid {}) is gone (its connection closed){}", stream_id_, w, slot->pid,
               lost ? (culprit >= 0 ? " on sample " + std::to_string(culprit) : std::string(" between samples")) +
                          "; its task is redone"
                    : "");
  if (lost) {
    events_.on_task_lost(w, std::move(*lost),
                         TaskLoss{culprit, "the attached worker's connection closed (it exited or was killed)", false});
  }
}

void AttachedWorkers::on_timeout(size_t w) {
  Slot& slot = slots_[w];
  const int64_t culprit = claimed_sample(slot);
  const double budget = std::chrono::duration<double>(timeouts_.budget(slot.task->samples())).count();
  const std::string cause = fmt::format(
      "no answer within {:.1f} s, the deadline of a task of {} samples (daemon.task_timeout_min_s, "
      "daemon.per_sample_timeout_ms): the attached worker was detached (its Loader ends it)",
      budget, slot.task->samples());
  spdlog::warn("stream {}: attached worker {} (pid {}) is past its task's deadline {}; detaching it and redoing "
               "the task", stream_id_, w, slot.pid,
               culprit >= 0 ? "on sample " + std::to_string(culprit) : std::string("between samples"));
  ++detached_;
  std::optional<Task> lost = end(slot, cause, /*must_exit=*/true);
  if (lost) events_.on_task_lost(w, std::move(*lost), TaskLoss{culprit, cause, true});
}

std::optional<size_t> AttachedWorkers::idle_worker() const {
  for (size_t w = 0; w < slots_.size(); ++w) {
    if (slots_[w].link != nullptr && !slots_[w].task) return w;
  }
  return std::nullopt;
}

void AttachedWorkers::assign(size_t w, Task task, const wire::WorkerAttach&, int) {
  Slot& slot = slots_[w];
  const auto now = std::chrono::steady_clock::now();
  task.deadline = timeouts_.deadline(now, task.samples());
  slot.task = std::move(task);
  slot.task_started = now;
  const uint64_t assignment = ++slot.assignments;
  slot.watchdog->expires_at(slot.task->deadline);
  // A wait that completed before the pool was destroyed (the stream closed in the same turn of the event loop) runs
  // with no error although its timer was cancelled: it must find that the pool is gone before touching it.
  slot.watchdog->async_wait([this, alive = std::weak_ptr<const bool>(alive_), w, assignment](
                                const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    if (slots_[w].assignments != assignment || !slots_[w].task || slots_[w].link == nullptr) return;
    on_timeout(w);
  });
  slot.link->send_task(slot.task->work);
}

void AttachedWorkers::detach_stream(uint64_t) {
  for (auto& slot : slots_) {
    slot.queued.clear();
    if (slot.link != nullptr) end(slot, "closed", /*must_exit=*/false);
  }
}

void AttachedWorkers::queue(Task task) {
  auto& queued = slots_[task.sequence() % route_].queued;
  // A lost task comes back older than those queued after it: sequence order, whatever the arrival order.
  auto at = std::upper_bound(queued.begin(), queued.end(), task.sequence(),
                             [](uint64_t s, const Task& t) { return s < t.sequence(); });
  queued.insert(at, std::move(task));
}

void AttachedWorkers::run_queued() {
  for (size_t w = 0; w < slots_.size(); ++w) {
    Slot& slot = slots_[w];
    if (slot.link == nullptr || slot.task || slot.queued.empty()) continue;
    Task task = std::move(slot.queued.front());
    slot.queued.pop_front();
    assign(w, std::move(task), wire::WorkerAttach{}, -1);
  }
}

size_t AttachedWorkers::queued() const {
  size_t n = 0;
  for (const auto& slot : slots_) n += slot.queued.size();
  return n;
}

std::vector<wire::WorkerInfo> AttachedWorkers::describe() const {
  std::vector<wire::WorkerInfo> out;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& slot : slots_) {
    if (slot.link == nullptr) continue;
    wire::WorkerInfo info;
    info.set_pid(slot.pid);
    info.set_state(slot.task ? "busy" : "idle");
    info.set_batches_done(slot.batches_done);
    const auto busy = slot.busy + (slot.task ? now - slot.task_started : std::chrono::steady_clock::duration{});
    info.set_busy_seconds(std::chrono::duration<double>(busy).count());
    info.set_alive_seconds(std::chrono::duration<double>(now - slot.started).count());
    out.push_back(info);
  }
  return out;
}

}  // namespace batchd::daemon
