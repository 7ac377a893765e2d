#include "streams/stream_stats.h"

namespace batchd::daemon {

void StreamStats::observe(const std::array<uint32_t, 4>& counts, bool work_left, bool delivery_left, bool running) {
  const auto now = Clock::now();
  const double dt = std::chrono::duration<double>(now - last_change_).count();
  last_change_ = now;
  if (!running) return;
  if (counts[0] == 0 && counts[1] == 0 && work_left) ahead_seconds_ += dt;      // all ready or leased
  if (counts[2] == 0 && counts[3] == 0 && delivery_left) stall_seconds_ += dt;  // nothing to read
}

void StreamStats::delivered(uint64_t samples, uint32_t skipped) {
  samples_delivered_ += samples;
  bytes_delivered_ += samples * bytes_per_sample_;
  skipped_ += skipped;
}

void StreamStats::add_work(size_t worker, const wire::WorkerDone& done, uint32_t samples) {
  const wire::StageNanos& s = done.stages();
  if (!done.has_error()) {
    work_ns_ += done.nanos();
    work_samples_ += samples;
    if (chunks_by_worker_.size() <= worker) chunks_by_worker_.resize(worker + 1);
    ++chunks_by_worker_[worker];
  }
  stages_.set_read(stages_.read() + s.read());
  stages_.set_decode(stages_.decode() + s.decode());
  stages_.set_resize(stages_.resize() + s.resize());
  stages_.set_normalize(stages_.normalize() + s.normalize());
  stages_.set_samples(stages_.samples() + s.samples());
  stages_.set_cache_hits(stages_.cache_hits() + s.cache_hits());
  stages_.set_cache_fills(stages_.cache_fills() + s.cache_fills());
  stages_.set_cache_uncached(stages_.cache_uncached() + s.cache_uncached());
}

double StreamStats::open_seconds() const { return std::chrono::duration<double>(Clock::now() - created_).count(); }

void StreamStats::fill(wire::StreamInfo* info) const {
  info->set_samples_skipped(skipped_);
  *info->mutable_stages() = stages_;
  info->set_open_seconds(open_seconds());
  info->set_samples_delivered(samples_delivered_);
  info->set_bytes_delivered(bytes_delivered_);
  info->set_ahead_seconds(ahead_seconds_);
  info->set_stall_seconds(stall_seconds_);
  for (uint64_t n : chunks_by_worker_) info->add_chunks_by_worker(n);
}

}  // namespace batchd::daemon
