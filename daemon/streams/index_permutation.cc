#include "streams/index_permutation.h"

#include "base/splitmix64.h"

namespace batchd::daemon {

IndexPermutation::IndexPermutation(uint64_t n, uint64_t seed, uint64_t epoch) : n_(n) {
  while (half_bits_ < 31 && (uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  SplitMix64 rng{seed ^ (0x6a09e667f3bcc909ull * (epoch + 1))};
  for (uint64_t& k : keys_) k = rng.next();
}

uint64_t IndexPermutation::encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_, right = x & half_mask_;
  for (uint64_t key : keys_) {
    const uint64_t f = SplitMix64::mix(right ^ key) & half_mask_;
    const uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t IndexPermutation::at(uint64_t i) const {
  uint64_t x = i;
  do {
    x = encrypt(x);
  } while (x >= n_);  // a cycle of the bijection on [0, 4^h) always comes back below n: it holds i
  return x;
}

}  // namespace batchd::daemon
