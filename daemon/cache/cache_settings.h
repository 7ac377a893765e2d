// cache_settings.h — [cache]: the sample cache's settings, read from TOML by the config layer (config/config.h).
#pragma once

#include <cstdint>

namespace batchd::daemon {

// [cache] (issue 27): the host-wide cache of pipelines' cache points (cache/sample_cache.h). Read at start-up only.
struct CacheSettings {
  // Bytes of shared memory the cache may hold (its index included), counted in limits.max_shm_bytes (its bytes in
  // use and the segments share it). -1 (the key absent) = a quarter of limits.max_shm_bytes, none below 1 MiB;
  // 0 = no cache (cache points computed).
  int64_t max_bytes = -1;
  // Bytes one uid's client-sent specs may fill (config pipelines and presets draw on the whole cache).
  // 0 (absent) = a quarter of max_bytes.
  uint64_t max_bytes_per_uid = 0;
};

}  // namespace batchd::daemon
