// remote_status.h — remote shards (s3://, http(s):// WebDataset shards, issue 28) as batchctl datasets and
// Admin::status() show them: the plain types of proto/batchd.proto's RemoteShardsInfo and RemoteCacheInfo, field for
// field.
//
// The daemon fetches each remote shard once per host into daemon.cache_dir/shards (bounded by
// remote.cache_max_bytes) and the workers read it from there (docs/operations.md "Remote shards"). Counts are since
// the daemon started; bytes are bytes.
#pragma once

#include <cstdint>
#include <string>

namespace batchd {

struct RemoteShardsStatus {
  uint64_t shards = 0;        // shards the dataset names (0: not a remote dataset)
  uint64_t shards_here = 0;   // of those, on this host's disk now
  uint64_t bytes = 0;         // all their sizes
  uint64_t bytes_here = 0;    // ... of those here
  uint64_t fetched = 0;       // downloads completed (indexing at load included)
  uint64_t fetched_bytes = 0;
  uint64_t prefetched = 0;    // downloads made ahead of the tasks (no task was waiting for the shard)
  uint64_t waited = 0;        // shards a task had to wait for (not fetched ahead in time)
  uint64_t failed = 0;        // downloads that failed after their retries
  uint64_t evicted = 0;       // shards removed to make room (remote.cache_max_bytes)
};

struct RemoteCacheStatus {
  bool enabled = false;       // daemon.cache_dir set and remote.cache_max_bytes > 0
  std::string dir;            // daemon.cache_dir/shards
  uint64_t max_bytes = 0;     // remote.cache_max_bytes, resolved
  uint64_t bytes = 0;         // complete files + downloads under way
  uint64_t files = 0;         // complete shard files
  uint64_t fetching = 0;      // downloads under way
  RemoteShardsStatus totals;  // every dataset together (fetched .. evicted)
};

}  // namespace batchd
