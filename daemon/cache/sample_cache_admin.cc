// sample_cache_admin.cc — the daemon's side of the SampleCache (sample_cache.h): a dead worker's entry reclaimed,
// entries dropped, the index summed for batchctl cache and the status. Runs on the daemon's event loop while workers
// fill and read; every transition is a CAS on the entry's state.
#include <sys/stat.h>

#include <map>

#include "cache/sample_cache_layout.h"

namespace batchd::daemon {

using namespace sample_cache_layout;  // NOLINT(google-build-using-namespace): the layout's own files

uint64_t SampleCache::reclaim_filler(int32_t pid) {
  if (pid <= 0) return 0;
  for (auto& r : header_->fillers) {
    if (r.pid.load(std::memory_order_acquire) != pid) continue;
    const int64_t slot = r.slot.load(std::memory_order_acquire);
    uint64_t dropped = 0;
    if (slot >= 0 && static_cast<uint64_t>(slot) < slots_) {
      Entry& e = entry(static_cast<uint64_t>(slot));
      uint64_t word = e.word.load(std::memory_order_acquire);
      if (e.filler.load(std::memory_order_relaxed) != pid) {
        // not its entry any more (committed or abandoned, then reused by another worker)
      } else if (state_of(word) == kFilling &&
                 e.word.compare_exchange_strong(word, with_state(word, kDying), std::memory_order_acq_rel)) {
        release(e, false);
        dropped = e.bytes;
        e.word.store(with_state(word, kDead), std::memory_order_release);
      } else if (state_of(word) == kClaimed &&
                 e.word.compare_exchange_strong(word, with_state(word, kDead), std::memory_order_acq_rel)) {
        // Its fields may be half written (the worker died between its claim and its filling store): the slot is
        // free again, and nothing else of it is released: at most one entry's bytes per such death stay counted.
        header_->index_used.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    r.slot.store(-1, std::memory_order_relaxed);
    r.pid.store(0, std::memory_order_release);  // the row is free for another worker
    return dropped;
  }
  return 0;  // it never filled
}

std::pair<uint64_t, uint64_t> SampleCache::drop(const std::function<bool(uint64_t, uint64_t)>& which) {
  uint64_t dropped = 0, entries = 0;
  for (uint64_t slot = 0; slot < slots_; ++slot) {
    Entry& e = entry(slot);
    const uint64_t word = e.word.load(std::memory_order_acquire);
    // Ready entries only: a filling one belongs to its worker until it commits (a later drop takes it). A worker
    // may drop a ready one meanwhile (its file changed) and reuse its slot: kill() then fails on the word.
    if (state_of(word) != kReady || !which(e.key.dataset, e.key.prefix)) continue;
    const uint64_t bytes = e.bytes;
    if (!kill(slot, word, false)) continue;
    dropped += bytes;
    ++entries;
  }
  return {entries, dropped};
}

std::vector<CacheGroup> SampleCache::groups() const {
  std::map<std::pair<uint64_t, uint64_t>, CacheGroup> by;
  for (uint64_t slot = 0; slot < slots_; ++slot) {
    const Entry& e = entry(slot);
    const State state = state_of(e.word.load(std::memory_order_acquire));
    if (state != kReady && state != kFilling) continue;
    auto& g = by[{e.key.dataset, e.key.prefix}];
    g.dataset = e.key.dataset;
    g.prefix = e.key.prefix;
    if (state == kReady) {
      ++g.entries;
      g.bytes += e.bytes;
    } else {
      ++g.filling;
    }
  }
  std::vector<CacheGroup> out;
  for (auto& [k, g] : by) out.push_back(g);
  return out;
}

CacheTotals SampleCache::totals() const {
  CacheTotals t;
  t.max_bytes = options_.max_bytes;
  t.max_bytes_per_uid = options_.max_bytes_per_uid;
  t.live_bytes = header_->live_bytes.load(std::memory_order_relaxed);
  struct stat st {};
  if (::fstat(fd_, &st) == 0) t.resident_bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  t.index_slots = slots_;
  t.index_used = header_->index_used.load(std::memory_order_relaxed);
  t.dropped_bytes = header_->dropped_bytes.load(std::memory_order_relaxed);
  t.refused_full = header_->refused_full.load(std::memory_order_relaxed);
  t.refused_uid = header_->refused_uid.load(std::memory_order_relaxed);
  t.refused_index = header_->refused_index.load(std::memory_order_relaxed);
  t.evicted_bytes = header_->evicted_bytes.load(std::memory_order_relaxed);
  t.segments = kSegments;
  t.segments_free = free_segments();
  for (const auto& r : header_->uid_churn) t.churn_bytes += r.load(std::memory_order_relaxed) * kUidUnit;
  for (const auto& c : churn_) t.churn_bytes += c.units * kUidUnit;
  for (const auto& r : header_->uids) {
    const uint64_t v = r.load(std::memory_order_relaxed);
    if ((v & kUnitsMask) != 0) t.uid_bytes.emplace_back(static_cast<uint32_t>(v >> 32), (v & kUnitsMask) * kUidUnit);
  }
  return t;
}

}  // namespace batchd::daemon
