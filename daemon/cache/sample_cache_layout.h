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

// An entry's state word: its generation (how many times its slot was claimed) above its state. Every transition is a
// CAS on the whole word, and a reader checks the word it saw before its copy after it: an entry dropped and its slot
// (or its bytes) reused by another sample meanwhile has another generation (no ABA).
// kEmpty: never used (ends a probe chain). kDead: released, reusable by any key whose probe passes it. kDying: being
// released (its fields are still read). A probe passes over everything but kEmpty.
enum State : uint64_t { kEmpty = 0, kClaimed = 1, kFilling = 2, kReady = 3, kDying = 4, kDead = 5 };
inline State state_of(uint64_t word) { return static_cast<State>(word & 0xff); }
inline uint64_t with_state(uint64_t word, State s) { return (word & ~uint64_t{0xff}) | s; }
inline uint64_t next_generation(uint64_t word, State s) { return ((word >> 8) + 1) << 8 | s; }

constexpr uint64_t kPage = 4096;
constexpr uint64_t kAlign = 64;            // entries' bytes start on a cache line
constexpr uint64_t kBytesPerSlot = 8192;   // one index entry per 8 KiB of cache (a 52x52 RGB image)
constexpr uint64_t kMinSlots = 1024;
constexpr uint64_t kMaxSlots = 1ull << 26;
constexpr uint64_t kMaxProbes = 64;        // linear probing: an entry is this near its home slot, or not cached
constexpr size_t kUidSlots = 256;
constexpr size_t kFillerSlots = 1024;  // worker processes that fill, at once (a row each; freed at their death)
constexpr uint64_t kMagic = 0x3265686361636462ull;  // "bdcache2"

// The data area is kSegments segments of max_bytes * kVirtualFactor / kSegments bytes each (sample_cache_segments.cc):
// entries are allocated in the current segment by a bump pointer, and a segment whose entries are all released is
// reset and reused whole. Its word packs the bytes bumped (high 32 bits) and the bytes of its live entries (low 32),
// both in kAlign units, so that one CAS allocates and a segment is reset only when nothing in it lives.
constexpr size_t kSegments = 64;  // one bit each in SampleCache::stuck_
constexpr uint64_t kSegmentUnitsMax = 0xffffffffull;
inline uint64_t seg_word(uint64_t used, uint64_t live) { return used << 32 | live; }
inline uint64_t seg_used(uint64_t word) { return word >> 32; }
inline uint64_t seg_live(uint64_t word) { return word & 0xffffffffull; }

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
  std::atomic<uint64_t> evicted_bytes;
  // Per uid, what its live bounded fills are charged (sample_cache_layout::uid_units): uid << 32 | units, one
  // atomic, so that a row whose units fall to 0 is free for any uid at once (no row is held for ever by a uid that
  // once filled, as 256 uids once held them all until restart) and a charge never lands on a row another uid took.
  std::atomic<uint64_t> uids[sample_cache_layout::kUidSlots];
  // Per uid row, the units of its entries dropped because their file changed (churn): still charged on the row
  // until the daemon's cleaner credits them, kChurnCredit later (SampleCache::clean), so that a uid who touches its
  // files refills at most its share per that time.
  std::atomic<uint64_t> uid_churn[sample_cache_layout::kUidSlots];
  Filler fillers[sample_cache_layout::kFillerSlots];
  std::atomic<uint64_t> current_segment;
  std::atomic<uint64_t> segments[sample_cache_layout::kSegments];
};

struct SampleCache::Entry {
  std::atomic<uint64_t> word;   // generation << 8 | State
  std::atomic<int32_t> filler;  // the pid of the worker that claimed it
  CacheKey key;
  FileStamp stamp;
  CachedShape shape;
  uint64_t offset, bytes;       // in the data area
  uint32_t uid;
  uint8_t uid_bounded;
};

static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int32_t>::is_always_lock_free,
              "the cache's atomics are shared between processes: they must be lock-free");

}  // namespace batchd::daemon
