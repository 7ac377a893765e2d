// task.h — the unit of work the scheduler hands to a worker: samples [begin, end) of one batch, with a deadline.
//
// A batch is made in one or more such chunks (chunking.h): several workers fill the chunks of one slot at once. The deadline is when the task is overdue; today nothing sets one (time_point::max(): none) and nothing
// enforces it: a task watchdog (kill the worker, log, requeue) is the policy that will stamp and check it.
//
// Plain value type.
#pragma once

#include <chrono>
#include <cstdint>

#include "batchd.pb.h"

namespace batchd::daemon {

struct Task {
  using Clock = std::chrono::steady_clock;

  wire::WorkerTask work;  // stream, sequence, epoch, batch, slot, begin, indices of [begin, end), attempt, skipped
  Clock::time_point deadline = Clock::time_point::max();

  uint64_t stream_id() const { return work.stream_id(); }
  uint64_t sequence() const { return work.sequence(); }
  uint32_t begin() const { return work.begin(); }
  uint32_t end() const { return work.begin() + static_cast<uint32_t>(work.indices_size()); }
};

}  // namespace batchd::daemon
