#include "cache/cache_hash.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <unistd.h>

namespace batchd::daemon {

namespace {

uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

void sip_round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = rotl(v1, 13);
  v1 ^= v0;
  v0 = rotl(v0, 32);
  v2 += v3;
  v3 = rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = rotl(v1, 17);
  v1 ^= v2;
  v2 = rotl(v2, 32);
}

std::array<uint64_t, 2> random_key() {
  std::array<uint64_t, 2> key{};
  auto* out = reinterpret_cast<unsigned char*>(key.data());
  size_t got = 0;
  while (got < sizeof key) {
    const ssize_t n = ::getrandom(out + got, sizeof key - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      break;  // no getrandom (a very old kernel): the clock and pid, weaker but not a constant
    }
  }
  if (got < sizeof key) {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    key[0] ^= static_cast<uint64_t>(ts.tv_nsec) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(::getpid());
    key[1] ^= static_cast<uint64_t>(ts.tv_sec) * 0xbf58476d1ce4e5b9ull;
  }
  return key;
}

// Drawn at static initialization: in the daemon, before any worker forks.
const std::array<uint64_t, 2> kProcessKey = random_key();

}  // namespace

uint64_t siphash24(const std::array<uint64_t, 2>& key, std::string_view text) {
  uint64_t v0 = 0x736f6d6570736575ull ^ key[0], v1 = 0x646f72616e646f6dull ^ key[1];
  uint64_t v2 = 0x6c7967656e657261ull ^ key[0], v3 = 0x7465646279746573ull ^ key[1];
  const size_t n = text.size(), whole = n / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m;
    std::memcpy(&m, text.data() + i, 8);  // little-endian hosts (x86-64, aarch64)
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
  for (size_t i = whole; i < n; ++i) last |= static_cast<uint64_t>(static_cast<unsigned char>(text[i])) << (8 * (i - whole));
  v3 ^= last;
  sip_round(v0, v1, v2, v3);
  sip_round(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) sip_round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t cache_hash(std::string_view text) { return siphash24(kProcessKey, text); }

}  // namespace batchd::daemon
