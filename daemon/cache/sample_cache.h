// sample_cache.h — the host-wide cache point (issue 27): what a pipeline's deterministic prefix made of a sample,
// kept in daemon-owned shared memory so that later epochs, later streams and other trainers read it instead of
// reading, decoding and resizing the file again.
//
// Memory. One memfd (no name in /dev/shm: nothing to leak; it goes with the last process that maps it), created by
// the daemon before it forks its workers, who inherit the mapping (respawns too: they fork from the daemon). It is
// sparse: pages exist only where an entry was written. Layout: a header (counters, the per-uid table, the segments),
// an index of fixed-size entries (open addressing, linear probing), then the data area. Admission is CoorDL's
// fill-once, never-evict ("MinIO") policy, whose hit rate under per-epoch reshuffles is cache size / dataset size,
// where LRU thrashes: live bytes (ready and filling entries) are bounded by Options::max_bytes and a fill past it is
// refused, never made by evicting another entry.
//
// Reuse. An entry is dropped when batchctl cache --drop, a reload that changed its dataset or a worker that died
// filling it says so, or when its file changed (FileStamp): its pages are punched out of the memfd at once (the
// memory goes back to the host) and its bytes stop counting. Its index slot is reusable by the next fill whose probe
// passes it; its bytes' range by the next fills once its whole segment is free (sample_cache_layout.h: the data area
// is kSegments segments, kVirtualFactor x max_bytes in all, filled one after the other and reset when nothing in them
// lives). Dropped entries scattered over every segment could hold them all; the daemon's cleaner (clean(), every
// second) then evicts the few live entries of the emptiest segments so that a quarter of the segments stay free, and
// keeps the memory the memfd holds within max_bytes. So entries are evicted only after drops, never to make room
// for a fill, and drops (a user touching the files of a cached dataset each epoch) can no longer use up the cache.
// A uid's entries dropped because their file changed stay charged to the uid (client specs) for kChurnCredit: one
// uid refills at most its share per that time.
//
// No torn entry is ever read. An entry's state goes empty or dead -> claimed (a CAS that also bumps its generation:
// one filler wins; another worker that misses the same sample at the same time fills a second entry, harmlessly: the
// first ready one found is used) -> filling -> ready (a release store, after every byte and field is written) ->
// dying -> dead (dropped: its bytes released, its slot free). A reader uses an entry only if it loads `ready`
// (acquire) before it reads its fields and copies its bytes, and loads the very same word (state and generation)
// after: a copy that raced a drop, or a reuse of the slot or of the bytes by another sample, is detected and thrown
// away. A worker killed while filling leaves its entry claimed or filling, which no reader uses; the daemon drops
// the dead worker's entry and punches it (reclaim_filler).
//
// Used by workers (lookup, fill: one thread each) and by the daemon's event loop (reclaim, drop, stats), in
// different processes at once: everything shared is atomic or written before a release store.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "batchd/result.h"
#include "cache/cache_hash.h"  // cache_hash: the ids of CacheKey
#include "data/regular_file.h"  // FileStamp: the sample's file when its entry was made, checked at every use

namespace batchd::daemon {

// Which sample an entry holds: the dataset as loaded (hash of DatasetRegistry::key, which a reload that changes the
// dataset changes), the ops before the cache point (cache_prefix_id), and the sample index.
struct CacheKey {
  uint64_t dataset = 0;
  uint64_t prefix = 0;
  int64_t sample = 0;
  bool operator==(const CacheKey&) const = default;
};

// What the bytes of an entry are (spec_pipeline.cc writes and reads them).
struct CachedShape {
  uint8_t kind = 0;       // spec_pipeline.cc's CachedKind: an RGB image, a tensor's values, the slot's bytes
  uint8_t dtype = 0;      // wire::DType of a tensor
  uint8_t channels = 0;
  uint8_t hwc = 0;
  uint32_t height = 0, width = 0;
  int64_t label = 0;      // the sample's label (read with the file): a hit reads no file
};

// Totals of one (dataset, prefix) of the index (stats()).
struct CacheGroup {
  uint64_t dataset = 0, prefix = 0;
  uint64_t entries = 0;   // ready
  uint64_t bytes = 0;     // of the ready entries
  uint64_t filling = 0;   // entries being written now (or left by a worker that died: reclaimed at its death)
};

struct CacheTotals {
  uint64_t max_bytes = 0;          // Options::max_bytes
  uint64_t max_bytes_per_uid = 0;
  uint64_t live_bytes = 0;         // bytes of ready + filling entries (what the bound counts)
  uint64_t resident_bytes = 0;     // memory the memfd holds now (its allocated blocks: index pages included)
  uint64_t index_slots = 0, index_used = 0;  // entries of the index, and those holding a sample or being filled
  uint64_t dropped_bytes = 0;      // bytes of entries dropped (punched out) in the daemon's life
  uint64_t refused_full = 0;       // fills refused: max_bytes reached (or the virtual area used up)
  uint64_t refused_uid = 0;        // fills refused: the uid's max_bytes_per_uid reached
  uint64_t refused_index = 0;      // fills refused: the index is too full
  uint64_t evicted_bytes = 0;      // bytes of live entries the cleaner evicted to free a segment (clean())
  uint64_t segments = 0, segments_free = 0;  // of the data area (sample_cache_layout.h)
  uint64_t churn_bytes = 0;        // bytes of uid-bounded entries dropped because their file changed, still charged
  // Per uid with live bounded fills, what they count against max_bytes_per_uid: their bytes, each at least 8 KiB
  // (an entry's share of the index: tiny entries cannot take it all), in whole 4 KiB units. A uid whose entries are
  // all gone has no row: its row is free for any other uid.
  std::vector<std::pair<uint32_t, uint64_t>> uid_bytes;
};

class SampleCache {
 public:
  struct Options {
    uint64_t max_bytes = 0;          // cache.max_bytes: live bytes of all entries, the index included; 0 = no cache
    uint64_t max_bytes_per_uid = 0;  // cache.max_bytes_per_uid: live bytes one uid's client-sent specs may fill
                                     // (an entry counts at least 8 KiB there: its share of the index)
  };
  // An entry found: its bytes (valid while the daemon lives; zeros once dropped) and shape. Copy them, then call
  // still_valid(): only then are the copied bytes the entry's.
  struct Found {
    std::span<const uint8_t> bytes;
    CachedShape shape;
    uint64_t slot = 0;
    uint64_t word = 0;  // the entry's state word when found: still_valid() wants the same
  };
  // An entry being filled: write `bytes`, then commit(). Destroyed uncommitted (an error in the ops after the claim),
  // it is dropped.
  class Fill {
   public:
    Fill() = default;
    Fill(Fill&& other) noexcept { *this = std::move(other); }
    Fill& operator=(Fill&& other) noexcept;
    ~Fill();
    std::span<uint8_t> bytes() const { return bytes_; }
    void commit();

   private:
    friend class SampleCache;
    SampleCache* cache_ = nullptr;
    uint64_t slot_ = 0;
    std::span<uint8_t> bytes_;
  };

  // kInvalidArgument if max_bytes is too small to hold its index (at least 1 MiB); errors of memfd_create, ftruncate
  // and mmap naming the call.
  static Result<std::unique_ptr<SampleCache>> create(const Options& options);
  ~SampleCache();
  SampleCache(const SampleCache&) = delete;
  SampleCache& operator=(const SampleCache&) = delete;

  // Worker side. The ready entry for `key` made from the file `stamp` describes, if any.
  std::optional<Found> find(const CacheKey& key, const FileStamp& stamp) const;
  // True if the entry `found` came from is still ready: the bytes copied from it are whole.
  bool still_valid(const Found& found) const;
  // Claims an entry and `bytes` of memory for it, or nothing (an entry for `key` is ready or being filled by
  // another worker already; the cache is full, the uid's share is full, the index is too full, the memory could not
  // be had): the caller then serves the sample uncached. `uid_bounded`: a
  // client-sent spec, whose fills count against max_bytes_per_uid of `uid`.
  std::optional<Fill> begin_fill(const CacheKey& key, const FileStamp& stamp, const CachedShape& shape,
                                 uint64_t bytes, uint32_t uid, bool uid_bounded);

  // Daemon side. Drops the filling entries of worker process `pid` (it died): they can never be committed.
  uint64_t reclaim_filler(int32_t pid);
  // Drops every ready entry `which` selects (by dataset hash and prefix): readers stop using it, its pages go back
  // to the host. A filling entry belongs to its worker until it commits (a later drop takes it). Returns the entries
  // and bytes dropped.
  std::pair<uint64_t, uint64_t> drop(const std::function<bool(uint64_t dataset, uint64_t prefix)>& which);
  // The cleaner, every second on the daemon's event loop (CacheCleaner): credits the churn older than kChurnCredit
  // back to its uids; when fewer than a quarter of the segments are free or the memfd holds more than max_bytes,
  // evicts the ready entries of the emptiest segments (scanning at most kCleanSlots index slots per call, so that a
  // call costs the loop a few milliseconds at most). Returns the bytes evicted.
  uint64_t clean(std::chrono::steady_clock::time_point now);
  bool cleaning() const { return !cleaning_.empty(); }  // a pass over the index is under way: call clean() soon
  std::vector<CacheGroup> groups() const;
  CacheTotals totals() const;
  const Options& options() const { return options_; }

  struct Header;
  struct Entry;
  struct Filler;

 private:
  SampleCache(Options options, int fd, uint8_t* base, uint64_t map_bytes, uint64_t slots, uint64_t data_offset,
              uint64_t segment_bytes);
  void abandon(uint64_t slot);
  // Kills a ready entry whose word is `word` (a CAS: false if it changed) and releases it; `churn`: its file changed.
  bool kill(uint64_t slot, uint64_t word, bool churn);
  void release(Entry& e, bool churn);
  Entry& entry(uint64_t slot) const;
  // The data area's segments (sample_cache_segments.cc): an offset for `size` bytes (a multiple of kAlign), or
  // nothing when no segment has room; the bytes of a released entry given back to its segment.
  std::optional<uint64_t> allocate(uint64_t size);
  void free_range(uint64_t offset, uint64_t size);
  uint64_t free_segments() const;
  // The cleaner's targets: segments whose ready entries it evicts; the index slot its scan goes on from.
  std::vector<uint64_t> pick_segments_to_clean() const;
  void credit_churn(std::chrono::steady_clock::time_point now);

  Options options_;
  int fd_;
  uint8_t* base_;
  uint64_t map_bytes_;
  uint64_t slots_;
  uint64_t data_offset_;
  Header* header_;
  uint64_t segment_bytes_;
  Filler* filler_ = nullptr;  // this process's row in the header's filler table (workers, from their first fill)
  int32_t filler_pid_ = 0;    // whose row it is: a process forked after its parent filled claims a row of its own
  // The daemon's cleaner only (clean()): the segments it is emptying, where its scan of the index is, and the churn
  // units taken from Header::uid_churn, per row, waiting for their kChurnCredit.
  std::vector<uint64_t> cleaning_;
  std::vector<uint64_t> cleaning_evicted_;  // entries evicted from each of them in this pass
  uint64_t clean_cursor_ = 0;
  uint64_t stuck_ = 0;  // segments a whole pass could not free (bytes of a worker killed mid-claim), one bit each
  struct Churn {
    std::chrono::steady_clock::time_point at;
    size_t row;
    uint64_t units;
  };
  std::deque<Churn> churn_;
};

// The ratio of the data area's address range to max_bytes: room for dropped entries' ranges until their segments are
// free again (see above).
inline constexpr uint64_t kVirtualFactor = 8;
// The most cache.max_bytes may be: a segment (max_bytes / 8) counts its bytes in 32 bits of 64-byte units.
inline constexpr uint64_t kMaxCacheBytes = uint64_t{1} << 40;
// How long a uid's entries dropped because their file changed stay charged to it (see above).
inline constexpr std::chrono::seconds kChurnCredit{10};
// The most index slots one clean() call scans (about 2 ms).
inline constexpr uint64_t kCleanSlots = 1u << 16;

}  // namespace batchd::daemon
