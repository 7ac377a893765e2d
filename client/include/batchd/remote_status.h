// remote_status.h — remote shards (s3://, http(s):// WebDataset shards, issue 28) as batchctl datasets and
// Admin::status() show them: the plain types of proto/batchd_admin.proto's RemoteShardsInfo and RemoteCacheInfo, field
// for field.
//
// The daemon fetches each remote shard once per host into daemon.cache_dir/shards (bounded by
// remote.cache_max_bytes) and the workers read it from there (docs/operations.md "Remote shards"). Counts are since
// the daemon started; bytes are bytes.
#pragma once

#include <cstdint>
#include <string>
#include "batchd/status_fields.h"

namespace batchd {

#define BATCHD_REMOTE_SHARDS_STATUS_FIELDS(F)                                                                         \
  F(uint64_t, shards) /* shards the dataset names (0: not a remote dataset) */                                        \
  F(uint64_t, shards_here) /* of those, on this host's disk now */                                                    \
  F(uint64_t, bytes) /* all their sizes */                                                                            \
  F(uint64_t, bytes_here) /* ... of those here */                                                                     \
  F(uint64_t, fetched) /* downloads completed (indexing at load included) */                                          \
  F(uint64_t, fetched_bytes)                                                                                          \
  F(uint64_t, prefetched) /* downloads made ahead of the tasks (no task was waiting for the shard) */                 \
  F(uint64_t, waited) /* shards a task had to wait for (not fetched ahead in time) */                                 \
  F(uint64_t, failed) /* downloads that failed after their retries */                                                 \
  F(uint64_t, evicted) /* shards removed to make room (remote.cache_max_bytes) */
struct RemoteShardsStatus {
  BATCHD_REMOTE_SHARDS_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

#define BATCHD_REMOTE_CACHE_STATUS_FIELDS(F)                                                                          \
  F(bool, enabled) /* daemon.cache_dir set and remote.cache_max_bytes > 0 */                                          \
  F(std::string, dir) /* daemon.cache_dir/shards */                                                                   \
  F(uint64_t, max_bytes) /* remote.cache_max_bytes, resolved */                                                       \
  F(uint64_t, bytes) /* complete files + downloads under way */                                                       \
  F(uint64_t, files) /* complete shard files */                                                                       \
  F(uint64_t, fetching) /* downloads under way */                                                                     \
  F(RemoteShardsStatus, totals) /* every dataset together (fetched .. evicted) */
struct RemoteCacheStatus {
  BATCHD_REMOTE_CACHE_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

}  // namespace batchd
