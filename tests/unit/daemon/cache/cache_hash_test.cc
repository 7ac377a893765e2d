// cache_hash (cache/cache_hash.h): SipHash-2-4 as its paper gives it, and ids a client cannot forge: the 64-bit ids
// that key the sample cache's entries (of the op prefix a client sends) cannot be made to name another spec's.
#include "cache/cache_hash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

namespace batchd::daemon {
namespace {

TEST(CacheHashTest, SipHash24GivesThePapersVector) {
  // SipHash paper, appendix A: key 00 01 .. 0f, message 00 01 .. 0e (15 bytes).
  std::array<uint64_t, 2> key{};
  std::string message;
  for (int i = 0; i < 16; ++i) reinterpret_cast<unsigned char*>(key.data())[i] = static_cast<unsigned char>(i);
  for (int i = 0; i < 15; ++i) message.push_back(static_cast<char>(i));
  EXPECT_EQ(siphash24(key, message), 0xa129ca6149be45e5ull);
}

TEST(CacheHashTest, EqualTextsHashEqualInThisProcessAndOthersDiffer) {
  EXPECT_EQ(cache_hash("imagenet#3"), cache_hash(std::string("imagenet#") + "3"));
  EXPECT_NE(cache_hash("imagenet#3"), cache_hash("imagenet#4"));
  EXPECT_NE(cache_hash(""), cache_hash(std::string(1, '\0')));
}

#ifdef __GLIBCXX__
// libstdc++'s std::hash<std::string_view> on 64-bit (libstdc++-v3/libsupc++/hash_bytes.cc, MurmurHash64A-like, seed
// 0xc70f6907): every step is invertible, so a message whose 8-byte block `at + 1` the sender chooses can be made to
// hash to any given message's value after a change to block `at`. Returns `target` with block `at` replaced by
// `block`, and block `at + 1` computed so that std::hash agrees.
constexpr uint64_t kMul = (uint64_t{0xc6a4a793} << 32) + 0x5bd1e995;
uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }
uint64_t load(const std::string& s, size_t block) {
  uint64_t v;
  std::memcpy(&v, s.data() + 8 * block, 8);
  return v;
}
uint64_t mix(uint64_t k) { return shift_mix(k * kMul) * kMul; }
uint64_t inverse(uint64_t odd) {
  uint64_t inv = odd;
  for (int i = 0; i < 6; ++i) inv *= 2 - odd * inv;  // Newton: odd * inv == 1 mod 2^64
  return inv;
}
uint64_t unmix(uint64_t d) { return shift_mix(d * inverse(kMul)) * inverse(kMul); }  // shift_mix by 47: self-inverse
std::string forge(const std::string& target, size_t at, uint64_t block) {
  uint64_t h = 0xc70f6907ull ^ (target.size() * kMul);
  for (size_t b = 0; b < at; ++b) h = (h ^ mix(load(target, b))) * kMul;
  const uint64_t before = h;
  const uint64_t want = (((before ^ mix(load(target, at))) * kMul) ^ mix(load(target, at + 1))) * kMul;
  const uint64_t mine = (before ^ mix(block)) * kMul;
  const uint64_t k = unmix((want * inverse(kMul)) ^ mine);  // (mine ^ mix(k)) * kMul == want
  std::string out = target;
  std::memcpy(out.data() + 8 * at, &block, 8);
  std::memcpy(out.data() + 8 * (at + 1), &k, 8);
  return out;
}

TEST(CacheHashTest, AClientCannotForgeAnotherPrefixsId) {
  // A canonical prefix's bytes stand in for val224's; a client's spec has 16 bytes of its own there (two doubles of
  // a NumberList, packed: fill, mean, std).
  const std::string val224 = "decode|exact_decode=0|resize|size=256|interpolation=bilinear|center_crop|size=224#";
  const std::string mine = forge(val224, 2, 0x3ff0000000000000ull);
  ASSERT_NE(mine, val224);
  ASSERT_EQ(mine.size(), val224.size());
  EXPECT_NE(cache_hash(mine), cache_hash(val224))
      << "a prefix id a client can compute a collision for lets its entries be read as another spec's (poisoning)";
}
#endif

}  // namespace
}  // namespace batchd::daemon
