// cache_status.h — the daemon's sample cache as batchctl cache and Admin::status() show it (DaemonStatus::cache):
// the plain types of proto/batchd.proto's CacheStatus, CacheGroupInfo and CacheDropped, field for field.
//
// The cache (docs/operations.md "Cache") keeps, per sample, what the ops before a pipeline's `cache` op made of it,
// in the daemon's shared memory: later epochs, streams and trainers read it instead of decoding again. Counts are
// since the daemon started; bytes are bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchd {

// One (dataset load, op prefix) of the cache (admins see these).
struct CacheGroupStatus {
  std::string dataset;          // the dataset's name
  uint64_t load = 0;            // which load of it (a reload that changes the dataset makes a new one)
  bool current = false;         // the load streams open now (false: its entries can no longer be hit)
  std::string prefix;           // the ops before the cache point: "decode -> resize -> center_crop"
  uint64_t prefix_id = 0;
  uint64_t entries = 0;         // ready entries
  uint64_t bytes = 0;           // their bytes
  uint64_t filling = 0;         // entries being written now
  uint64_t dataset_samples = 0; // fill progress = entries / dataset_samples
  uint64_t hits = 0;            // samples served from the cache
  uint64_t fills = 0;           // samples computed and kept
  uint64_t uncached = 0;        // samples computed and not kept (the cache, a uid's share or the index full)
};

struct CacheStatus {
  bool enabled = false;            // cache.max_bytes > 0
  uint64_t max_bytes = 0;          // cache.max_bytes (taken out of limits.max_shm_bytes)
  uint64_t max_bytes_per_uid = 0;  // cache.max_bytes_per_uid: what one uid's own specs may fill
  uint64_t live_bytes = 0;         // bytes of its entries and index: what max_bytes bounds
  uint64_t resident_bytes = 0;     // memory it holds now
  uint64_t index_slots = 0, index_used = 0;  // index_used: slots holding an entry or being filled
  uint64_t dropped_bytes = 0;      // dropped since start (batchctl cache --drop, reloads, workers that died filling,
                                   // files that changed, evictions)
  uint64_t refused_full = 0;       // fills refused because max_bytes was reached
  uint64_t refused_uid = 0;        // ... a uid's max_bytes_per_uid was reached
  uint64_t refused_index = 0;      // ... the index was too full
  uint64_t evicted_bytes = 0;      // live entries' bytes the cleaner evicted to free segments (after drops only)
  uint64_t segments = 0, segments_free = 0;  // of the data area; the cleaner keeps a quarter free
  uint64_t churn_bytes = 0;        // client-spec entries dropped because their file changed, charged for 10 s more
  uint64_t hits = 0, fills = 0, uncached = 0;  // all groups together
  std::vector<CacheGroupStatus> groups;        // admins only (empty for anyone else)
};

// What Admin::drop_cache() dropped.
struct CacheDropped {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

}  // namespace batchd
