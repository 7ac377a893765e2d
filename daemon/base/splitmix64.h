// splitmix64.h — the samplers' random numbers: SplitMix64 (Steele, Lea, Flood 2014; the seeding generator
// recommended for xoshiro), a well-mixed 64-bit stream from any seed, and Lemire's unbiased bounded draw. Used by
// the shuffle (sampler.cc) and the random windows (window_sampler.cc); a value type, one per caller.
#pragma once

#include <cstdint>

namespace batchd::daemon {

struct SplitMix64 {
  uint64_t state;
  // SplitMix64's output function: a bijection of 64-bit values that mixes every input bit into every output bit.
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t next() { return mix(state += 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, bound), bound >= 1, without modulo bias (Lemire's multiply-shift with rejection).
  uint64_t below(uint64_t bound) {
    for (;;) {
      const unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
      const auto low = static_cast<uint64_t>(m);
      if (low >= bound || low >= (-bound) % bound) return static_cast<uint64_t>(m >> 64);
    }
  }
};

}  // namespace batchd::daemon
