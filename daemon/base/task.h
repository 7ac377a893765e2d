// task.h — the unit of work the scheduler hands to a worker: samples [begin, end) of one batch, with a deadline;
// the watchdog's time budget for a task; and how a task was lost with its worker.
//
// A batch is made in one or more such chunks (chunking.h): several workers fill the chunks of one slot at once.
// The deadline is stamped when the task is assigned to a worker (WorkerPool::assign): now + TaskTimeouts::budget()
// of its samples. A worker still on the task at its deadline is killed by the pool's watchdog, and the task comes
// back to its stream (WorkerEvents::on_task_lost) with a TaskLoss that says so.
//
// Plain value types.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "batchd.pb.h"

namespace batchd::daemon {

struct Task {
  using Clock = std::chrono::steady_clock;

  wire::WorkerTask work;  // stream, sequence, epoch, batch, slot, begin, indices of [begin, end), attempt, skipped
  Clock::time_point deadline = Clock::time_point::max();  // max(): not assigned (no deadline)

  uint64_t stream_id() const { return work.stream_id(); }
  uint64_t sequence() const { return work.sequence(); }
  uint32_t begin() const { return work.begin(); }
  uint32_t end() const { return work.begin() + static_cast<uint32_t>(work.indices_size()); }
  uint32_t samples() const { return static_cast<uint32_t>(work.indices_size()); }
};

// The task watchdog's defaults (config keys daemon.task_timeout_min_s, daemon.per_sample_timeout_ms): a task of n
// samples may take max(task_timeout_min_s, per_sample_timeout_ms × n). Measured as deploy/batchd.toml and
// docs/reliability.md say.
inline constexpr uint32_t kDefaultTaskTimeoutMinS = 60;
inline constexpr uint32_t kDefaultPerSampleTimeoutMs = 5000;

// How long a worker may take for a task of n samples before the watchdog kills it:
// max(min, per_sample × n), from the config keys daemon.task_timeout_min_s and daemon.per_sample_timeout_ms (their
// defaults above).
struct TaskTimeouts {
  std::chrono::milliseconds min{std::chrono::seconds(kDefaultTaskTimeoutMinS)};
  std::chrono::milliseconds per_sample{kDefaultPerSampleTimeoutMs};

  std::chrono::milliseconds budget(uint64_t samples) const {
    // Saturates instead of overflowing (per_sample × samples is at most 3.6e6 × 2^24 ms by the config's ranges).
    const uint64_t per = static_cast<uint64_t>(per_sample.count());
    const uint64_t cap = static_cast<uint64_t>(std::chrono::milliseconds::max().count());
    const uint64_t total = per != 0 && samples > cap / per ? cap : per * samples;
    return std::max(min, std::chrono::milliseconds(static_cast<int64_t>(total)));
  }
  // assigned + budget(samples), or time_point::max() where that would overflow.
  Task::Clock::time_point deadline(Task::Clock::time_point assigned, uint64_t samples) const {
    const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Task::Clock::time_point::max() - assigned);
    const auto b = budget(samples);
    return b >= room ? Task::Clock::time_point::max() : assigned + b;
  }
};

// Why a task came back from its worker (WorkerEvents::on_task_lost; ErrorPolicy::after_worker_death).
struct TaskLoss {
  // The sample the worker was on (its progress page) when a crash signal of its own killed it or the watchdog
  // killed it past the task's deadline; -1: none (between samples, or killed from outside).
  int64_t culprit = -1;
  // How it ended: "killed by signal Segmentation fault", "no answer within 30.0 s (watchdog)", ...
  std::string cause;
  // The watchdog killed it (the task was past its deadline), rather than a death of its own.
  bool timed_out = false;
};

}  // namespace batchd::daemon
