// cache_status.h — the daemon's sample cache as batchctl cache and Admin::status() show it (DaemonStatus::cache):
// the plain types of proto/batchd_admin.proto's CacheStatus, CacheGroupInfo and CacheDropped, field for field.
//
// The cache (docs/operations.md "Cache") keeps, per sample, what the ops before a pipeline's `cache` op made of it,
// in the daemon's shared memory: later epochs, streams and trainers read it instead of decoding again. Counts are
// since the daemon started; bytes are bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include "batchd/status_fields.h"

namespace batchd {

// One (dataset load, op prefix) of the cache (admins see these).
#define BATCHD_CACHE_GROUP_STATUS_FIELDS(F)                                                                           \
  F(std::string, dataset) /* the dataset's name */                                                                    \
  F(uint64_t, load) /* which load of it (a reload that changes the dataset makes a new one) */                        \
  F(bool, current) /* the load streams open now (false: its entries can no longer be hit) */                          \
  F(std::string, prefix) /* the ops before the cache point: "decode -> resize -> center_crop" */                      \
  F(uint64_t, prefix_id)                                                                                              \
  F(uint64_t, entries) /* ready entries */                                                                            \
  F(uint64_t, bytes) /* their bytes */                                                                                \
  F(uint64_t, filling) /* entries being written now */                                                                \
  F(uint64_t, dataset_samples) /* fill progress = entries / dataset_samples */                                        \
  F(uint64_t, hits) /* samples served from the cache */                                                               \
  F(uint64_t, fills) /* samples computed and kept */                                                                  \
  F(uint64_t, uncached) /* samples computed and not kept (the cache, a uid's share or the index full) */
struct CacheGroupStatus {
  BATCHD_CACHE_GROUP_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

#define BATCHD_CACHE_STATUS_FIELDS(F)                                                                                 \
  F(bool, enabled) /* cache.max_bytes > 0 */                                                                          \
  F(uint64_t, max_bytes) /* cache.max_bytes (taken out of limits.max_shm_bytes) */                                    \
  F(uint64_t, max_bytes_per_uid) /* cache.max_bytes_per_uid: what one uid's own specs may fill */                     \
  F(uint64_t, live_bytes) /* bytes of its entries and index: what max_bytes bounds */                                 \
  F(uint64_t, resident_bytes) /* memory it holds now */                                                               \
  F(uint64_t, index_slots)                                                                                            \
  F(uint64_t, index_used) /* index_used: slots holding an entry or being filled */                                    \
  F(uint64_t, dropped_bytes) /* dropped since start (batchctl cache --drop, reloads, workers that died filling, */    \
  /* files that changed, evictions) */                                                                                \
  F(uint64_t, refused_full) /* fills refused because max_bytes was reached */                                         \
  F(uint64_t, refused_uid) /* ... a uid's max_bytes_per_uid was reached */                                            \
  F(uint64_t, refused_index) /* ... the index was too full */                                                         \
  F(uint64_t, evicted_bytes) /* live entries' bytes the cleaner evicted to free segments (after drops only) */        \
  F(uint64_t, segments)                                                                                               \
  F(uint64_t, segments_free) /* of the data area; the cleaner keeps a quarter free */                                 \
  F(uint64_t, churn_bytes) /* client-spec entries dropped because their file changed, charged for 10 s more */        \
  F(uint64_t, hits)                                                                                                   \
  F(uint64_t, fills)                                                                                                  \
  F(uint64_t, uncached) /* all groups together */                                                                     \
  F(std::vector<CacheGroupStatus>, groups) /* admins only (empty for anyone else) */
struct CacheStatus {
  BATCHD_CACHE_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

// What Admin::drop_cache() dropped.
struct CacheDropped {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

}  // namespace batchd
