// sample_cache_layout.h — internal to daemon/cache: the SampleCache's shared-memory layout (sample_cache.h), shared
// by its worker side (sample_cache.cc: create, find, fill) and its daemon side (sample_cache_admin.cc: reclaim,
// drop, groups, totals). Every process that maps the cache reads these structs at the same addresses: only lock-free
// atomics and plain fields written before a release store.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "cache/sample_cache.h"

namespace batchd::daemon {

namespace sample_cache_layout {

enum State : uint32_t { kEmpty = 0, kClaimed = 1, kFilling = 2, kReady = 3, kDead = 4 };

constexpr uint64_t kPage = 4096;
constexpr uint64_t kAlign = 64;            // entries' bytes start on a cache line
constexpr uint64_t kBytesPerSlot = 8192;   // one index entry per 8 KiB of cache (a 52x52 RGB image)
constexpr uint64_t kMinSlots = 1024;
constexpr uint64_t kMaxSlots = 1ull << 26;
constexpr uint64_t kMaxProbes = 64;        // linear probing: an entry is this near its home slot, or not cached
constexpr size_t kUidSlots = 256;
constexpr size_t kFillerSlots = 1024;  // worker processes that fill, at once (a row each; freed at their death)
constexpr uint64_t kMagic = 0x3165686361636462ull;  // "bdcache1"

inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// What a uid-bounded entry of `size` bytes counts against max_bytes_per_uid: at least its share of the index (one
// entry per kBytesPerSlot), so that one uid's tiny entries (a 1x1 image: 64 bytes) cannot take the index every
// user's entries share while its bytes stay far below its share. A uid holds at most max_bytes_per_uid /
// kBytesPerSlot entries, max_bytes_per_uid / max_bytes of the index.
inline uint64_t uid_charge(uint64_t size) { return std::max(size, kBytesPerSlot); }
// The same in the per-uid table's units of 4 KiB (its rows pack a uid and its units in 64 bits: 16 TiB per uid).
constexpr uint64_t kUidUnit = 4096;
constexpr uint64_t kUnitsMask = 0xffffffffull;
inline uint64_t uid_units(uint64_t size) { return (uid_charge(size) + kUidUnit - 1) / kUidUnit; }
inline uint64_t uid_tag(uint32_t uid) { return uint64_t{uid} << 32; }

}  // namespace sample_cache_layout

// Which entry a filling worker has claimed (-1: none): what the daemon drops when that worker dies.
struct SampleCache::Filler {
  std::atomic<int32_t> pid;  // 0: a free row
  std::atomic<int64_t> slot;
};

struct SampleCache::Header {
  uint64_t magic;
  std::atomic<uint64_t> next;          // bump pointer: offset of the next allocation in the data area
  std::atomic<uint64_t> live_bytes;
  std::atomic<uint64_t> index_used;
  std::atomic<uint64_t> dropped_bytes;
  std::atomic<uint64_t> refused_full, refused_uid, refused_index;
  // Per uid, what its live bounded fills are charged (sample_cache_layout::uid_units): uid << 32 | units, one
  // atomic, so that a row whose units fall to 0 is free for any uid at once (no row is held for ever by a uid that
  // once filled, as 256 uids once held them all until restart) and a charge never lands on a row another uid took.
  std::atomic<uint64_t> uids[sample_cache_layout::kUidSlots];
  Filler fillers[sample_cache_layout::kFillerSlots];
};

struct SampleCache::Entry {
  std::atomic<uint32_t> state;
  std::atomic<int32_t> filler;  // the pid of the worker that claimed it
  CacheKey key;
  FileStamp stamp;
  CachedShape shape;
  uint64_t offset, bytes;       // in the data area
  uint32_t uid;
  uint8_t uid_bounded;
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the cache's atomics are shared between processes: they must be lock-free");

}  // namespace batchd::daemon
