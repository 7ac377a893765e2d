// sample_cache_segments.cc — the SampleCache's data area (sample_cache.h, sample_cache_layout.h): entries' bytes
// allocated from segments and given back, and the daemon's cleaner that keeps segments free and the memory the memfd
// holds within max_bytes, and credits churn back to its uids. allocate() and release() run in workers and in the
// daemon at once: every segment change is a CAS on its word. clean() runs on the daemon's event loop only.
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>

#include "cache/sample_cache_layout.h"

namespace batchd::daemon {

using namespace sample_cache_layout;  // NOLINT(google-build-using-namespace): the layout's own files

namespace {

// Takes segment `k`, free (nothing in it lives; its word `word`), for a fresh start: held (full, one unit live) while
// its stray pages are punched, so that nobody allocates in it or takes it meanwhile, then given `units` from its
// start (0: none, left free). False if its word moved (someone allocated in it, or took it).
bool reset_segment(std::atomic<uint64_t>& segment, uint64_t word, uint8_t* start, uint64_t bytes, uint64_t units) {
  const uint64_t cap = bytes / kAlign;
  if (seg_live(word) != 0 || !segment.compare_exchange_strong(word, seg_word(cap, 1), std::memory_order_acq_rel)) {
    return false;
  }
  if (seg_used(word) > 0) ::madvise(start, bytes, MADV_REMOVE);
  segment.store(seg_word(units, units), std::memory_order_release);
  return true;
}

}  // namespace

std::optional<uint64_t> SampleCache::allocate(uint64_t size) {
  const uint64_t units = size / kAlign, cap = segment_bytes_ / kAlign;
  uint8_t* data = base_ + data_offset_;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t current = header_->current_segment.load(std::memory_order_acquire) % kSegments;
    auto& segment = header_->segments[current];
    uint64_t word = segment.load(std::memory_order_acquire);
    while (seg_used(word) + units <= cap) {
      if (segment.compare_exchange_weak(word, seg_word(seg_used(word) + units, seg_live(word) + units),
                                        std::memory_order_acq_rel)) {
        return current * segment_bytes_ + seg_used(word) * kAlign;
      }
    }
    // The current segment is full: the next free one (the current one last) is reset and becomes current.
    for (uint64_t j = 1; j <= kSegments; ++j) {
      const uint64_t k = (current + j) % kSegments;
      uint64_t w = header_->segments[k].load(std::memory_order_acquire);
      if (seg_live(w) != 0) continue;
      if (reset_segment(header_->segments[k], w, data + k * segment_bytes_, segment_bytes_, units)) {
        uint64_t expected = current;
        if (header_->current_segment.compare_exchange_strong(expected, k, std::memory_order_acq_rel)) {
          const uint64_t left = header_->segments[current].load(std::memory_order_acquire);  // emptied meanwhile?
          if (seg_live(left) == 0 && seg_used(left) > 0) {
            reset_segment(header_->segments[current], left, data + current * segment_bytes_, segment_bytes_, 0);
          }
        }
        return k * segment_bytes_;
      }
    }
    if (header_->current_segment.load(std::memory_order_acquire) % kSegments == current) break;
  }
  return std::nullopt;  // every segment holds live entries: the cleaner frees some (clean())
}

void SampleCache::free_range(uint64_t offset, uint64_t size) {
  const uint64_t k = offset / segment_bytes_, units = size / kAlign;
  const uint64_t word = header_->segments[k].fetch_sub(units, std::memory_order_acq_rel) - units;  // its live units
  // Its last live entry gone: the pages its dead entries shared go back to the host now (the current segment is
  // still being filled: it is reset when it is taken again, or by the cleaner).
  if (seg_live(word) == 0 && seg_used(word) > 0 && k != header_->current_segment.load(std::memory_order_acquire)) {
    reset_segment(header_->segments[k], word, base_ + data_offset_ + k * segment_bytes_, segment_bytes_, 0);
  }
}

uint64_t SampleCache::free_segments() const {
  uint64_t n = 0;
  for (const auto& s : header_->segments) n += seg_live(s.load(std::memory_order_relaxed)) == 0 ? 1 : 0;
  return n;
}

// The entry is dying (no reader uses it from here on, and nobody else changes it): its pages go back to the host,
// its bytes stop counting and go back to its segment.
void SampleCache::release(Entry& e, bool churn) {
  const uint64_t size = round_up(e.bytes, kAlign);
  const auto start = reinterpret_cast<uintptr_t>(base_ + data_offset_ + e.offset);
  const uint64_t first = round_up(start, kPage), last = (start + size) / kPage * kPage;
  // Only the pages wholly its own: a neighbour's bytes may share the first and last (they go when the segment is
  // reset).
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_REMOVE);
  header_->live_bytes.fetch_sub(size, std::memory_order_relaxed);
  header_->dropped_bytes.fetch_add(size, std::memory_order_relaxed);
  header_->index_used.fetch_sub(1, std::memory_order_relaxed);
  free_range(e.offset, size);
  if (e.uid_bounded == 0) return;
  const uint64_t units = uid_units(size);
  for (size_t r = 0; r < kUidSlots; ++r) {  // the row charged with it names its uid until its units fall to 0
    auto& row = header_->uids[r];
    uint64_t v = row.load(std::memory_order_relaxed);
    if ((v & ~kUnitsMask) != uid_tag(e.uid) || (v & kUnitsMask) < units) continue;
    if (churn) {  // stays charged until the cleaner credits it (kChurnCredit)
      header_->uid_churn[r].fetch_add(units, std::memory_order_relaxed);
      return;
    }
    while ((v & ~kUnitsMask) == uid_tag(e.uid) && (v & kUnitsMask) >= units) {
      if (row.compare_exchange_weak(v, v - units, std::memory_order_relaxed)) return;
    }
  }
}


std::vector<uint64_t> SampleCache::pick_segments_to_clean() const {
  const uint64_t current = header_->current_segment.load(std::memory_order_acquire) % kSegments;
  std::vector<std::pair<uint64_t, uint64_t>> candidates;  // (live units, segment)
  for (uint64_t k = 0; k < kSegments; ++k) {
    const uint64_t w = header_->segments[k].load(std::memory_order_relaxed);
    // Free ones need nothing; full ones free nothing; a stuck one holds bytes no entry names (see clean()).
    if (k == current || seg_live(w) == 0 || seg_used(w) <= seg_live(w) || (stuck_ >> k & 1) != 0) continue;
    candidates.emplace_back(seg_live(w), k);
  }
  std::sort(candidates.begin(), candidates.end());
  const uint64_t free = free_segments();
  const uint64_t want = free < kSegments / 4 ? kSegments / 4 - free : 1;
  std::vector<uint64_t> out;
  for (size_t i = 0; i < candidates.size() && out.size() < want; ++i) out.push_back(candidates[i].second);
  return out;
}

void SampleCache::credit_churn(std::chrono::steady_clock::time_point now) {
  for (size_t r = 0; r < kUidSlots; ++r) {
    if (const uint64_t units = header_->uid_churn[r].exchange(0, std::memory_order_relaxed); units > 0) {
      churn_.push_back({now, r, units});
    }
  }
  while (!churn_.empty() && now - churn_.front().at >= kChurnCredit) {
    header_->uids[churn_.front().row].fetch_sub(churn_.front().units, std::memory_order_relaxed);
    churn_.pop_front();
  }
}

uint64_t SampleCache::clean(std::chrono::steady_clock::time_point now) {
  credit_churn(now);
  uint8_t* data = base_ + data_offset_;
  const uint64_t current = header_->current_segment.load(std::memory_order_acquire) % kSegments;
  for (uint64_t k = 0; k < kSegments; ++k) {  // free segments give back the pages their dead entries shared
    const uint64_t w = header_->segments[k].load(std::memory_order_acquire);
    if (seg_live(w) != 0) continue;
    stuck_ &= ~(uint64_t{1} << k);
    if (k != current && seg_used(w) > 0) reset_segment(header_->segments[k], w, data + k * segment_bytes_,
                                                       segment_bytes_, 0);
  }
  if (cleaning_.empty()) {
    struct stat st {};
    const uint64_t resident = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
    if (free_segments() >= kSegments / 4 && resident <= options_.max_bytes) return 0;
    cleaning_ = pick_segments_to_clean();
    cleaning_evicted_.assign(cleaning_.size(), 0);
    clean_cursor_ = 0;
    if (cleaning_.empty()) return 0;
  }
  uint64_t evicted = 0;
  for (const uint64_t end = std::min(slots_, clean_cursor_ + kCleanSlots); clean_cursor_ < end; ++clean_cursor_) {
    Entry& e = entry(clean_cursor_);
    const uint64_t word = e.word.load(std::memory_order_acquire);
    if (state_of(word) != kReady) continue;
    const uint64_t offset = e.offset, bytes = e.bytes;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.word.load(std::memory_order_relaxed) != word) continue;  // dropped and reused meanwhile
    auto target = std::find(cleaning_.begin(), cleaning_.end(), offset / segment_bytes_);
    if (target == cleaning_.end() || !kill(clean_cursor_, word, false)) continue;
    evicted += bytes;
    ++cleaning_evicted_[static_cast<size_t>(target - cleaning_.begin())];
  }
  if (clean_cursor_ == slots_) {  // a whole pass: a target still not free that gave nothing holds leaked bytes
    for (size_t i = 0; i < cleaning_.size(); ++i) {
      const uint64_t w = header_->segments[cleaning_[i]].load(std::memory_order_acquire);
      if (seg_live(w) != 0 && cleaning_evicted_[i] == 0) stuck_ |= uint64_t{1} << cleaning_[i];
    }
    cleaning_.clear();
  }
  header_->evicted_bytes.fetch_add(evicted, std::memory_order_relaxed);
  return evicted;
}

}  // namespace batchd::daemon
