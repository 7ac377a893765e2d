// index_permutation.h — the shuffle's permutation of [0, n), one index at a time: position i of the epoch's order
// is at(i), computed in O(1) time and memory, so that a stream of any size (a user's own Dataset may say len = 2^40)
// never holds or builds an epoch's order. Built on the daemon's event loop it once cost 11 s and 1 GiB at n = 2^27.
//
// The construction: a balanced Feistel network (Luby & Rackoff 1988) over the smallest domain [0, 4^h) that holds n,
// six rounds whose round function is SplitMix64's mix of (half, round key), the keys drawn from (seed, epoch); values
// at or above n walk the cycle on (Black & Rogaway, "Ciphers with Arbitrary Finite Domains", CT-RSA 2002), which
// keeps a bijection of [0, n) and takes fewer than 4 steps on average (the domain is under 4n). Not torch.randperm's
// permutation: the same semantics (a uniform-looking shuffle fixed by seed and epoch, the same on every rank).
// A value type; thread-compatible.
#pragma once

#include <array>
#include <cstdint>

namespace batchd::daemon {

class IndexPermutation final {
 public:
  IndexPermutation(uint64_t n, uint64_t seed, uint64_t epoch);  // n <= 2^62
  uint64_t size() const { return n_; }
  // The index at position i of the permutation, i < size().
  uint64_t at(uint64_t i) const;

 private:
  static constexpr int kRounds = 6;
  uint64_t encrypt(uint64_t x) const;

  uint64_t n_;
  unsigned half_bits_ = 0;  // h: the domain is [0, 2^(2h))
  uint64_t half_mask_ = 0;
  std::array<uint64_t, kRounds> keys_{};
};

}  // namespace batchd::daemon
