#include "config/cache_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "batchd/wire/shm_scan.h"
#include "base/shm_budget.h"

namespace batchd::daemon {

Result<std::unique_ptr<SampleCache>> make_sample_cache(Config* config) {
  const uint64_t budget = ShmBudget(config->limits.max_shm_bytes).limit();
  const bool absent = config->cache.max_bytes < 0;
  uint64_t bytes = absent ? budget / 4 : static_cast<uint64_t>(config->cache.max_bytes);
  if (absent && bytes < kMinCacheBytes) bytes = 0;  // a small budget: no cache rather than no daemon
  if (absent) bytes = std::min(bytes, kMaxCacheBytes);  // a huge budget: the most the cache can be
  config->cache.max_bytes = static_cast<int64_t>(bytes);
  if (bytes == 0) {
    spdlog::info("sample cache: off (cache.max_bytes = 0{}): cache points are computed every time",
                 absent ? ", a quarter of a small limits.max_shm_bytes" : "");
    return std::unique_ptr<SampleCache>();
  }
  if (bytes >= budget) {
    return Error(ErrorCode::kInvalidArgument,
                 "cache.max_bytes = " + std::to_string(bytes) + " leaves no room for segments: it is counted in "
                 "limits.max_shm_bytes (" + std::to_string(budget) + " bytes" +
                 (config->limits.max_shm_bytes == 0 ? ", half of physical memory" : "") +
                 "); lower it, or raise limits.max_shm_bytes");
  }
  if (config->cache.max_bytes_per_uid == 0) config->cache.max_bytes_per_uid = bytes / 4;
  auto cache = SampleCache::create({bytes, config->cache.max_bytes_per_uid});
  if (!cache.ok()) return cache.error().with_context("the sample cache (cache.max_bytes)");
  spdlog::info("sample cache: up to {} (cache.max_bytes; {} per uid for client specs), in the {} of "
               "limits.max_shm_bytes that segments and the cache's bytes share",
               wire::format_bytes(bytes), wire::format_bytes(config->cache.max_bytes_per_uid),
               wire::format_bytes(budget));
  return cache;
}

}  // namespace batchd::daemon
