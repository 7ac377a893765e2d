// cache_config.h — the daemon's sample cache from its [cache] settings (cache/cache_settings.h CacheSettings), made at
// start-up.
//
// cache.max_bytes is counted in limits.max_shm_bytes: the cache's live bytes and the streams' segments share that
// budget (a new stream is refused when segments + cache bytes would pass it; the cache itself never holds more than
// cache.max_bytes, which must be below the budget). -1 (absent) = a quarter of the budget (limits.max_shm_bytes,
// whose 0 is half of physical memory), or no cache when that is below 1 MiB; 0 = no cache.
// cache.max_bytes_per_uid 0 = a quarter of cache.max_bytes.
#pragma once

#include <memory>

#include "cache/sample_cache.h"
#include "config/config.h"

namespace batchd::daemon {

inline constexpr uint64_t kMinCacheBytes = 1u << 20;  // SampleCache::create's least

// The cache (null for cache.max_bytes = 0), with config->cache resolved. kInvalidArgument when cache.max_bytes leaves
// segments nothing (it must be below the budget) or is below 1 MiB; the cache's own errors (memfd_create, mmap).
Result<std::unique_ptr<SampleCache>> make_sample_cache(Config* config);

}  // namespace batchd::daemon
