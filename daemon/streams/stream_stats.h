// stream_stats.h — one stream's accounting for status and metrics: delivered samples and bytes, skipped samples,
// per-stage worker times, and where the time went (the daemon ahead of the client, or the client stalled).
//
// observe() is called before every slot state change with the slot counts as they were since the last call:
//   ahead: every slot was ready or leased and batches were left to make (the client is the bottleneck);
//   stall: no batch was ready or leased and batches were left to deliver (the client waited for data).
//
// chunks_by_worker counts the chunks each worker (by its number) made for the stream: one stream is made by many
// workers at once when its batches are split into chunks.
//
// Plain value type; not thread-safe (the daemon's io_context thread).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "batchd.pb.h"

namespace batchd::daemon {

class StreamStats final {
 public:
  using Clock = std::chrono::steady_clock;

  StreamStats(uint64_t bytes_per_sample, size_t workers)
      : bytes_per_sample_(bytes_per_sample), chunks_by_worker_(workers) {}

  // Charges the time since the last call; `counts` are slots per SlotRing::State (free, working, ready, leased).
  void observe(const std::array<uint32_t, 4>& counts, bool work_left, bool delivery_left, bool running);
  void delivered(uint64_t samples, uint32_t skipped);
  // Worker `worker` answered a chunk of `samples`: its stage times count; if it succeeded, its time (done.nanos)
  // feeds the time per sample and the chunk counts towards chunks_by_worker.
  void add_work(size_t worker, const wire::WorkerDone& done, uint32_t samples);
  // Mean worker time per sample over the stream's successful chunks; 0 before the first.
  double per_sample_ns() const { return work_samples_ ? static_cast<double>(work_ns_) / work_samples_ : 0.0; }

  // Fills the accounting fields of a StreamInfo row (stages, open time, delivered, ahead/stall, skipped,
  // chunks_by_worker).
  void fill(wire::StreamInfo* info) const;
  double open_seconds() const;

 private:
  Clock::time_point created_ = Clock::now();
  Clock::time_point last_change_ = created_;
  double ahead_seconds_ = 0, stall_seconds_ = 0;
  uint64_t samples_delivered_ = 0, bytes_delivered_ = 0, skipped_ = 0;
  uint64_t bytes_per_sample_;
  wire::StageNanos stages_;
  uint64_t work_ns_ = 0, work_samples_ = 0;
  std::vector<uint64_t> chunks_by_worker_;
};

}  // namespace batchd::daemon
