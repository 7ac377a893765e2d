#include "streams/chunking.h"

#include <algorithm>
#include <cmath>

namespace batchd::daemon {

std::vector<uint32_t> chunk_begins(uint32_t samples, uint32_t depth, const ChunkPolicy& policy,
                                   double per_sample_ns) {
  uint64_t k = (uint64_t{policy.workers} + std::max(depth, 1u) - 1) / std::max(depth, 1u);
  if (policy.min_chunk_us > 0 && per_sample_ns > 0) {
    // The fewest samples that make min_chunk_us of work; with k <= samples / m every chunk has at least m.
    const auto m = static_cast<uint64_t>(std::ceil(policy.min_chunk_us * 1000.0 / per_sample_ns));
    k = std::min<uint64_t>(k, std::max<uint64_t>(1, samples / std::max<uint64_t>(m, 1)));
  }
  k = std::clamp<uint64_t>(k, 1, std::max<uint32_t>(samples, 1));
  std::vector<uint32_t> begins;
  begins.reserve(k);
  for (uint64_t i = 0; i < k; ++i) begins.push_back(static_cast<uint32_t>(i * samples / k));
  return begins;
}

}  // namespace batchd::daemon
