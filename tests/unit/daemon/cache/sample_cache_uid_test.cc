// The sample cache's per-uid table frees a row when its uid has nothing charged any more (issue 43, 8): after 256
// distinct uids had filled one entry each with a client spec, every other uid's fills were refused ("uid share")
// until the daemon restarted, though its share was empty.
#include <gtest/gtest.h>

#include "cache/sample_cache.h"

namespace batchd::daemon {
namespace {

constexpr FileStamp kStamp{1000, 12345, 77};

bool fill(SampleCache& cache, int64_t sample, uint32_t uid) {
  auto f = cache.begin_fill({1, 42, sample}, kStamp, CachedShape{}, 20000, uid, /*uid_bounded=*/true);
  if (!f) return false;
  f->commit();
  return true;
}

TEST(SampleCacheUidTest, ARowIsFreedWhenItsUidHasNothingChargedAndAnotherUidTakesIt) {
  auto sut = SampleCache::create({64u << 20, 1u << 20});
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  for (uint32_t uid = 10000; uid < 10300; ++uid) {  // 300 users, one entry each, then their entries are dropped
    ASSERT_TRUE(fill(**sut, uid, uid)) << "uid " << uid << ": refused with " << (*sut)->totals().uid_bytes.size()
                                       << " uids charged";
    (*sut)->drop([](uint64_t, uint64_t) { return true; });
  }
  for (uint32_t uid = 20000; uid < 20256; ++uid) ASSERT_TRUE(fill(**sut, uid, uid)) << "uid " << uid;
  CacheTotals t = (*sut)->totals();
  EXPECT_EQ(t.uid_bytes.size(), 256u);
  EXPECT_EQ(t.refused_uid, 0u);
  for (const auto& [uid, bytes] : t.uid_bytes) EXPECT_EQ(bytes, 20480u) << "uid " << uid << ": 20000 in 4 KiB units";
  EXPECT_FALSE(fill(**sut, 30000, 30000)) << "256 uids hold live entries: the table is full";
  (*sut)->drop([](uint64_t, uint64_t) { return true; });
  EXPECT_TRUE((*sut)->totals().uid_bytes.empty());
  EXPECT_TRUE(fill(**sut, 30001, 30000)) << "their entries gone, their rows are free";
}

TEST(SampleCacheUidTest, AUidsChargesStayOnOneRowAndWithinItsShare) {
  auto sut = SampleCache::create({64u << 20, 1u << 20});
  ASSERT_TRUE(sut.ok());
  int filled = 0;
  for (int64_t i = 0; i < 100; ++i) filled += fill(**sut, i, 7);
  EXPECT_EQ(filled, 51) << "1 MiB of 20480-byte charges";
  const CacheTotals t = (*sut)->totals();
  ASSERT_EQ(t.uid_bytes.size(), 1u);
  EXPECT_EQ(t.uid_bytes[0], (std::pair<uint32_t, uint64_t>{7, 51 * 20480}));
}

}  // namespace
}  // namespace batchd::daemon
