#include "cache/sample_cache.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <span>

#include "cache/sample_cache_layout.h"
#include "streams/splitmix64.h"

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
  const uint64_t slots = std::clamp(pow2_at_least(options.max_bytes / kBytesPerSlot), kMinSlots, kMaxSlots);
  const uint64_t data_offset = round_up(round_up(sizeof(Header), kPage) + slots * sizeof(Entry), kPage);
  const uint64_t map_bytes = data_offset + kVirtualFactor * options.max_bytes;
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
      new SampleCache(options, fd, static_cast<uint8_t*>(base), map_bytes, slots, data_offset));
}

SampleCache::SampleCache(Options options, int fd, uint8_t* base, uint64_t map_bytes, uint64_t slots,
                         uint64_t data_offset)
    : options_(options), fd_(fd), base_(base), map_bytes_(map_bytes), slots_(slots), data_offset_(data_offset),
      header_(new (base) Header{}) {  // a fresh memfd reads as zeros: every entry kEmpty
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
    const uint32_t state = e.state.load(std::memory_order_acquire);
    if (state == kEmpty) return std::nullopt;  // the end of the probe chain
    // Only a ready entry's fields are read: they were written before its release store and never change after.
    if (state != kReady || !(e.key == key)) continue;
    if (!(e.stamp == stamp)) {  // the file changed since it was made: dropped (whoever wins the CAS releases it)
      uint32_t ready = kReady;
      if (e.state.compare_exchange_strong(ready, kDead, std::memory_order_acq_rel)) const_cast<SampleCache*>(this)->release(e);
      continue;
    }
    return Found{{base_ + data_offset_ + e.offset, e.bytes}, e.shape, slot};
  }
  return std::nullopt;
}

bool SampleCache::still_valid(const Found& found) const {
  std::atomic_thread_fence(std::memory_order_acquire);  // the copy happens before this load
  return entry(found.slot).state.load(std::memory_order_acquire) == kReady;
}

std::optional<SampleCache::Fill> SampleCache::begin_fill(const CacheKey& key, const FileStamp& stamp,
                                                         const CachedShape& shape, uint64_t bytes, uint32_t uid,
                                                         bool uid_bounded) {
  if (stamp.inode == 0 || bytes == 0) return std::nullopt;
  // Another worker made it, or is making it (filling: its key is published): one entry per sample, not two. (One
  // still claimed, its key not yet written, is not seen: then two entries may hold it, harmlessly.)
  const uint64_t first = home_slot(key, slots_);
  for (uint64_t i = 0; i < kMaxProbes; ++i) {
    Entry& e = entry((first + i) & (slots_ - 1));
    const uint32_t state = e.state.load(std::memory_order_acquire);
    if (state == kEmpty) break;
    if ((state == kFilling || state == kReady) && e.key == key && e.stamp == stamp) return std::nullopt;
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
  const uint64_t size = round_up(bytes, kAlign);
  if (header_->index_used.load(std::memory_order_relaxed) >= slots_ / 4 * 3) {
    header_->refused_index.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  // The bytes first (the counters), then the slot: a refusal leaves the index as it was.
  if (!reserve(header_->live_bytes, size, options_.max_bytes)) {
    header_->refused_full.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  std::atomic<uint64_t>* row = nullptr;
  auto unreserve = [&] {
    header_->live_bytes.fetch_sub(size, std::memory_order_relaxed);
    if (row != nullptr) row->fetch_sub(uid_units(size), std::memory_order_relaxed);  // it names uid while charged
  };
  if (uid_bounded) {
    row = charge_uid(header_->uids, uid, uid_units(size), options_.max_bytes_per_uid / kUidUnit);
    if (row == nullptr) {
      unreserve();
      header_->refused_uid.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
  }
  const uint64_t offset = header_->next.fetch_add(size, std::memory_order_relaxed);
  if (offset + size > kVirtualFactor * options_.max_bytes) {
    unreserve();
    header_->refused_full.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  // The pages now, where a failure is an error and not a SIGBUS in the middle of the copy (a host out of memory).
  uint8_t* data = base_ + data_offset_ + offset;
  const auto page_start = reinterpret_cast<uintptr_t>(data) / kPage * kPage;
  const uint64_t page_len = round_up(reinterpret_cast<uintptr_t>(data) + size - page_start, kPage);
  if (::madvise(reinterpret_cast<void*>(page_start), page_len, MADV_POPULATE_WRITE) != 0 && errno != EINVAL) {
    unreserve();
    header_->refused_full.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const uint64_t home = home_slot(key, slots_);
  for (uint64_t i = 0; i < kMaxProbes; ++i) {
    const uint64_t slot = (home + i) & (slots_ - 1);
    Entry& e = entry(slot);
    uint32_t state = kEmpty;
    if (!e.state.compare_exchange_strong(state, kClaimed, std::memory_order_acq_rel)) continue;
    header_->index_used.fetch_add(1, std::memory_order_relaxed);
    filler_->slot.store(static_cast<int64_t>(slot), std::memory_order_release);
    e.filler.store(filler_->pid.load(std::memory_order_relaxed), std::memory_order_relaxed);
    e.key = key;
    e.stamp = stamp;
    e.shape = shape;
    e.offset = offset;
    e.bytes = bytes;
    e.uid = uid;
    e.uid_bounded = uid_bounded ? 1 : 0;
    e.state.store(kFilling, std::memory_order_release);  // from here on the daemon can release it (reclaim_filler)
    Fill fill;
    fill.cache_ = this;
    fill.slot_ = slot;
    fill.bytes_ = std::span<uint8_t>(data, bytes);
    return fill;
  }
  unreserve();  // no free slot near home: the bytes of the range stay unused (counted nowhere)
  header_->refused_index.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
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
  cache_->entry(slot_).state.store(kReady, std::memory_order_release);
  cache_->filler_->slot.store(-1, std::memory_order_release);
  cache_ = nullptr;
}

void SampleCache::abandon(uint64_t slot) {
  Entry& e = entry(slot);
  e.state.store(kDead, std::memory_order_release);
  filler_->slot.store(-1, std::memory_order_release);
  release(e);
}

// The entry is dead (no reader uses it from here on): its pages go back to the host and its bytes stop counting.
void SampleCache::release(Entry& e) {
  const uint64_t size = round_up(e.bytes, kAlign);
  const auto start = reinterpret_cast<uintptr_t>(base_ + data_offset_ + e.offset);
  const uint64_t first = round_up(start, kPage), last = (start + size) / kPage * kPage;
  // Only the pages wholly its own: a neighbour's bytes may share the first and last.
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_REMOVE);
  header_->live_bytes.fetch_sub(size, std::memory_order_relaxed);
  header_->dropped_bytes.fetch_add(size, std::memory_order_relaxed);
  if (e.uid_bounded != 0) {
    const uint64_t units = uid_units(size);
    bool done = false;
    for (auto& r : header_->uids) {  // the row charged with it names its uid until its units fall to 0
      uint64_t v = r.load(std::memory_order_relaxed);
      while (!done && (v & ~kUnitsMask) == uid_tag(e.uid) && (v & kUnitsMask) >= units) {
        done = r.compare_exchange_weak(v, v - units, std::memory_order_relaxed);
      }
      if (done) break;
    }
  }
}

}  // namespace batchd::daemon
