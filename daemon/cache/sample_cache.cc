#include "cache/sample_cache.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <span>

#include "cache/sample_cache_layout.h"
#include "base/splitmix64.h"

namespace batchd::daemon {

using namespace sample_cache_layout;  // NOLINT(google-build-using-namespace): the layout's own files

namespace {

uint64_t pow2_at_least(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Adds `n` to `counter` if the sum stays within `bound`.
bool reserve(std::atomic<uint64_t>& counter, uint64_t n, uint64_t bound) {
  uint64_t now = counter.load(std::memory_order_relaxed);
  do {
    if (now + n > bound) return false;
  } while (!counter.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
  return true;
}

// Charges `units` to `uid` in the per-uid table if its total stays within `bound`: on the row that names it with
// units charged, else on the first row with none (free, or left by a uid whose entries are all gone: taken over),
// which concurrent fills of one uid agree on (scanned in the same order). Null when over the bound or no row is free.
std::atomic<uint64_t>* charge_uid(std::span<std::atomic<uint64_t>> rows, uint32_t uid, uint64_t units,
                                  uint64_t bound) {
  const uint64_t tag = uid_tag(uid);
  for (bool take_free : {false, true}) {
    for (auto& row : rows) {
      uint64_t v = row.load(std::memory_order_relaxed);
      for (;;) {
        const bool mine = (v & ~kUnitsMask) == tag, free = (v & kUnitsMask) == 0;
        if (!(mine && !free) && !(take_free && (mine || free))) break;
        const uint64_t now = mine ? v & kUnitsMask : 0;
        if (now + units > bound) return nullptr;
        if (row.compare_exchange_weak(v, tag | (now + units), std::memory_order_relaxed)) return &row;
      }
    }
  }
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<SampleCache>> SampleCache::create(const Options& options) {
  if (options.max_bytes < (1u << 20)) {
    return Error(ErrorCode::kInvalidArgument, "cache.max_bytes = " + std::to_string(options.max_bytes) +
                                                  " is below 1 MiB, too small for the cache's index: raise it, or set "
                                                  "0 to run without a cache");
  }
  const uint64_t segment_bytes = round_up(kVirtualFactor * options.max_bytes / kSegments, kPage);
  static_assert(kVirtualFactor * kMaxCacheBytes / kSegments / kAlign <= kSegmentUnitsMax);
  if (options.max_bytes > kMaxCacheBytes) {
    return Error(ErrorCode::kInvalidArgument, "cache.max_bytes = " + std::to_string(options.max_bytes) +
                                                  " is above the sample cache's 1 TiB: lower it");
  }
  const uint64_t slots = std::clamp(pow2_at_least(options.max_bytes / kBytesPerSlot), kMinSlots, kMaxSlots);
  const uint64_t data_offset = round_up(round_up(sizeof(Header), kPage) + slots * sizeof(Entry), kPage);
  const uint64_t map_bytes = data_offset + kSegments * segment_bytes;
  const int fd = ::memfd_create("batchd-cache", MFD_CLOEXEC);
  if (fd < 0) return posix_error("memfd_create for the sample cache", errno);
  if (::ftruncate(fd, static_cast<off_t>(map_bytes)) != 0) {
    const int e = errno;
    ::close(fd);
    return posix_error("ftruncate of the sample cache's memfd to " + std::to_string(map_bytes) + " bytes", e);
  }
  void* base = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (base == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    return posix_error("mmap of the sample cache (" + std::to_string(map_bytes) + " bytes)", e);
  }
  return std::unique_ptr<SampleCache>(
      new SampleCache(options, fd, static_cast<uint8_t*>(base), map_bytes, slots, data_offset, segment_bytes));
}

SampleCache::SampleCache(Options options, int fd, uint8_t* base, uint64_t map_bytes, uint64_t slots,
                         uint64_t data_offset, uint64_t segment_bytes)
    : options_(options), fd_(fd), base_(base), map_bytes_(map_bytes), slots_(slots), data_offset_(data_offset),
      header_(new (base) Header{}), segment_bytes_(segment_bytes) {  // a fresh memfd reads as zeros: all kEmpty
  header_->magic = kMagic;
  // The index counts against the bound: what is left of max_bytes is for entries' bytes.
  header_->live_bytes.store(data_offset, std::memory_order_relaxed);
}

SampleCache::~SampleCache() {
  ::munmap(base_, map_bytes_);
  ::close(fd_);
}

SampleCache::Entry& SampleCache::entry(uint64_t slot) const {
  return reinterpret_cast<Entry*>(base_ + round_up(sizeof(Header), kPage))[slot];
}

namespace {
uint64_t home_slot(const CacheKey& key, uint64_t slots) {
  const uint64_t h = SplitMix64::mix(key.dataset ^ SplitMix64::mix(key.prefix ^ SplitMix64::mix(key.sample)));
  return h & (slots - 1);
}
}  // namespace

std::optional<SampleCache::Found> SampleCache::find(const CacheKey& key, const FileStamp& stamp) const {
  const uint64_t home = home_slot(key, slots_);
  for (uint64_t i = 0; i < kMaxProbes; ++i) {
    const uint64_t slot = (home + i) & (slots_ - 1);
    Entry& e = entry(slot);
    const uint64_t word = e.word.load(std::memory_order_acquire);
    if (state_of(word) == kEmpty) return std::nullopt;  // the end of the probe chain
    if (state_of(word) != kReady) continue;
    // A ready entry's fields were written before its release store; read them, then check that the word did not
    // move meanwhile (a drop and a reuse of the slot by another sample rewrites them).
    const CacheKey k = e.key;
    const FileStamp s = e.stamp;
    const CachedShape shape = e.shape;
    const uint64_t offset = e.offset, bytes = e.bytes;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.word.load(std::memory_order_relaxed) != word || !(k == key)) continue;
    if (!(s == stamp)) {  // the file changed since it was made: dropped (whoever wins the CAS releases it)
      const_cast<SampleCache*>(this)->kill(slot, word, /*churn=*/true);
      continue;
    }
    return Found{{base_ + data_offset_ + offset, bytes}, shape, slot, word};
  }
  return std::nullopt;
}

bool SampleCache::still_valid(const Found& found) const {
  std::atomic_thread_fence(std::memory_order_acquire);  // the copy happens before this load
  return entry(found.slot).word.load(std::memory_order_acquire) == found.word;
}

std::optional<SampleCache::Fill> SampleCache::begin_fill(const CacheKey& key, const FileStamp& stamp,
                                                         const CachedShape& shape, uint64_t bytes, uint32_t uid,
                                                         bool uid_bounded) {
  if (stamp.inode == 0 || bytes == 0) return std::nullopt;
  const uint64_t size = round_up(bytes, kAlign);
  if (size > segment_bytes_) {  // larger than a segment (an eighth of max_bytes): never cached
    header_->refused_full.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  // Another worker made it, or is making it (filling: its key is published): one entry per sample, not two. (One
  // still claimed, its key not yet written, is not seen: then two entries may hold it, harmlessly.)
  const uint64_t home = home_slot(key, slots_);
  for (uint64_t i = 0; i < kMaxProbes; ++i) {
    Entry& e = entry((home + i) & (slots_ - 1));
    const uint64_t word = e.word.load(std::memory_order_acquire);
    if (state_of(word) == kEmpty) break;
    if ((state_of(word) == kFilling || state_of(word) == kReady) && e.key == key && e.stamp == stamp) {
      return std::nullopt;
    }
  }
  // This process's row, claimed at its first fill. A child forked after its parent filled inherits filler_ but
  // not the row (reclaim_filler(child) must find the child's pid there): it claims its own.
  const auto pid = static_cast<int32_t>(::getpid());
  if (filler_ == nullptr || filler_pid_ != pid) {
    filler_ = nullptr;
    for (auto& r : header_->fillers) {
      int32_t free = 0;
      if (r.pid.compare_exchange_strong(free, pid)) {
        r.slot.store(-1, std::memory_order_relaxed);
        filler_ = &r;
        filler_pid_ = pid;
        break;
      }
    }
    if (filler_ == nullptr) return std::nullopt;  // more than kFillerSlots workers filling: served uncached
  }
  if (header_->index_used.load(std::memory_order_relaxed) >= slots_ / 4 * 3) {
    header_->refused_index.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  // The slot first, then the bytes (the counters), then the memory: a refusal touches no memory.
  uint64_t slot = 0, word = 0;
  bool claimed = false;
  for (uint64_t i = 0; i < kMaxProbes && !claimed; ++i) {
    slot = (home + i) & (slots_ - 1);
    word = entry(slot).word.load(std::memory_order_acquire);
    while ((state_of(word) == kEmpty || state_of(word) == kDead) && !claimed) {
      claimed = entry(slot).word.compare_exchange_weak(word, next_generation(word, kClaimed),
                                                       std::memory_order_acq_rel);
    }
  }
  if (!claimed) {  // no free slot near home
    header_->refused_index.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  word = next_generation(word, kClaimed);
  Entry& e = entry(slot);
  header_->index_used.fetch_add(1, std::memory_order_relaxed);
  filler_->slot.store(static_cast<int64_t>(slot), std::memory_order_release);
  e.filler.store(pid, std::memory_order_relaxed);
  std::atomic<uint64_t>* row = nullptr;
  std::optional<uint64_t> offset;
  auto refuse = [&](std::atomic<uint64_t>& counter, int undo) {
    if (undo >= 3) free_range(*offset, size);
    if (undo >= 2 && row != nullptr) row->fetch_sub(uid_units(size), std::memory_order_relaxed);  // names uid
    if (undo >= 1) header_->live_bytes.fetch_sub(size, std::memory_order_relaxed);
    header_->index_used.fetch_sub(1, std::memory_order_relaxed);
    filler_->slot.store(-1, std::memory_order_release);
    e.word.store(with_state(word, kDead), std::memory_order_release);
    counter.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  };
  if (!reserve(header_->live_bytes, size, options_.max_bytes)) return refuse(header_->refused_full, 0);
  if (uid_bounded) {
    row = charge_uid(header_->uids, uid, uid_units(size), options_.max_bytes_per_uid / kUidUnit);
    if (row == nullptr) return refuse(header_->refused_uid, 1);
  }
  offset = allocate(size);
  if (!offset) return refuse(header_->refused_full, 2);
  // The pages now, where a failure is an error and not a SIGBUS in the middle of the copy (a host out of memory).
  uint8_t* data = base_ + data_offset_ + *offset;
  const auto page_start = reinterpret_cast<uintptr_t>(data) / kPage * kPage;
  const uint64_t page_len = round_up(reinterpret_cast<uintptr_t>(data) + size - page_start, kPage);
  if (::madvise(reinterpret_cast<void*>(page_start), page_len, MADV_POPULATE_WRITE) != 0 && errno != EINVAL) {
    return refuse(header_->refused_full, 3);
  }
  e.key = key;
  e.stamp = stamp;
  e.shape = shape;
  e.offset = *offset;
  e.bytes = bytes;
  e.uid = uid;
  e.uid_bounded = uid_bounded ? 1 : 0;
  e.word.store(with_state(word, kFilling), std::memory_order_release);  // the daemon may release it from here on
  Fill fill;
  fill.cache_ = this;
  fill.slot_ = slot;
  fill.bytes_ = std::span<uint8_t>(data, bytes);
  return fill;
}

SampleCache::Fill& SampleCache::Fill::operator=(Fill&& other) noexcept {
  if (this != &other) {
    if (cache_ != nullptr) cache_->abandon(slot_);
    cache_ = std::exchange(other.cache_, nullptr);
    slot_ = other.slot_;
    bytes_ = other.bytes_;
  }
  return *this;
}

SampleCache::Fill::~Fill() {
  if (cache_ != nullptr) cache_->abandon(slot_);
}

void SampleCache::Fill::commit() {
  if (cache_ == nullptr) return;
  auto& word = cache_->entry(slot_).word;  // filling: only its filler changes it
  word.store(with_state(word.load(std::memory_order_relaxed), kReady), std::memory_order_release);
  cache_->filler_->slot.store(-1, std::memory_order_release);
  cache_ = nullptr;
}

void SampleCache::abandon(uint64_t slot) {
  Entry& e = entry(slot);
  const uint64_t word = e.word.load(std::memory_order_relaxed);  // filling: only its filler changes it
  e.word.store(with_state(word, kDying), std::memory_order_release);
  filler_->slot.store(-1, std::memory_order_release);
  release(e, false);
  e.word.store(with_state(word, kDead), std::memory_order_release);
}

bool SampleCache::kill(uint64_t slot, uint64_t word, bool churn) {
  Entry& e = entry(slot);
  if (!e.word.compare_exchange_strong(word, with_state(word, kDying), std::memory_order_acq_rel)) return false;
  release(e, churn);
  e.word.store(with_state(word, kDead), std::memory_order_release);  // the slot is free for another sample
  return true;
}

}  // namespace batchd::daemon
