#include "streams/window_sampler.h"

#include <algorithm>

#include "base/splitmix64.h"

namespace batchd::daemon {

uint64_t random_window_batches(uint64_t epoch_windows, uint32_t batch_size, uint32_t world_size) {
  const uint64_t per_batch = uint64_t{batch_size} * world_size;
  return std::max<uint64_t>(1, epoch_windows / per_batch);
}

void draw_windows(uint64_t bound, uint64_t seed, uint32_t rank, uint64_t step, std::span<int64_t> out) {
  // Each input goes through the bijective mix before the next is folded in, with its own odd constant, so (seed,
  // rank, step) triples that differ in any one of them start unrelated streams.
  uint64_t h = SplitMix64::mix(seed + 0x243f6a8885a308d3ull);
  h = SplitMix64::mix(h ^ (uint64_t{rank} * 0x13198a2e03707345ull + 1));
  h = SplitMix64::mix(h ^ (step * 0xa4093822299f31d1ull + 0x082efa98ec4e6c89ull));
  SplitMix64 rng{h};
  for (int64_t& offset : out) offset = static_cast<int64_t>(rng.below(bound));
}

}  // namespace batchd::daemon
