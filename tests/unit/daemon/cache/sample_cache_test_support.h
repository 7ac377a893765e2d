// sample_cache_test_support.h — the SampleCache tests' helpers: a cache of a given size, and entries whose bytes
// are a pattern of their key (sample_cache_test.cc, sample_cache_process_test.cc).
#pragma once

#include "cache/sample_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

#include "base/splitmix64.h"

namespace batchd::daemon::cache_test {


inline constexpr uint64_t kMiB = 1 << 20;
inline constexpr FileStamp kStamp{1000, 12345, 77};

inline std::unique_ptr<SampleCache> make_cache(uint64_t max_bytes, uint64_t per_uid = 0) {
  auto cache = SampleCache::create({max_bytes, per_uid == 0 ? max_bytes / 4 : per_uid});
  EXPECT_TRUE(cache.ok()) << cache.error().message();
  return std::move(cache).value();
}

inline CacheKey key_of(int64_t sample, uint64_t dataset = 1) { return {dataset, 42, sample}; }

// An entry's bytes: a pattern that only its key makes, and a size that depends on it too.
inline uint64_t size_of(const CacheKey& k) { return 1000 + static_cast<uint64_t>(k.sample * 37 % 3000); }
inline uint8_t byte_of(const CacheKey& k, uint64_t i) {
  return static_cast<uint8_t>(SplitMix64::mix(k.dataset * 1000003 + static_cast<uint64_t>(k.sample) * 7919 + i));
}
inline void write_pattern(const CacheKey& k, std::span<uint8_t> out) {
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = byte_of(k, i);
}
inline bool is_pattern(const CacheKey& k, const std::vector<uint8_t>& bytes) {
  if (bytes.size() != size_of(k)) return false;
  for (uint64_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != byte_of(k, i)) return false;
  }
  return true;
}

// Fills `k` with its pattern and commits; false if the cache refused.
inline bool fill(SampleCache& cache, const CacheKey& k, uint32_t uid = 0, bool bounded = false, uint64_t bytes = 0) {
  CachedShape shape;
  shape.label = k.sample;
  auto f = cache.begin_fill(k, kStamp, shape, bytes == 0 ? size_of(k) : bytes, uid, bounded);
  if (!f) return false;
  if (bytes == 0) write_pattern(k, f->bytes());
  f->commit();
  return true;
}

// The entry's bytes, copied and validated as CachePoint::load does; nullopt on a miss or a copy that raced a drop.
inline std::optional<std::vector<uint8_t>> read(const SampleCache& cache, const CacheKey& k, const FileStamp& s = kStamp) {
  auto found = cache.find(k, s);
  if (!found) return std::nullopt;
  std::vector<uint8_t> copy(found->bytes.begin(), found->bytes.end());
  if (!cache.still_valid(*found)) return std::nullopt;
  return copy;
}


}  // namespace batchd::daemon::cache_test
