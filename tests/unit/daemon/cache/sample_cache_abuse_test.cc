// The sample cache against a hostile client of a shared host (cache/sample_cache.h): one uid's client-sent fills
// cannot use up the index that every user's entries share.
#include <gtest/gtest.h>

#include "cache/sample_cache.h"

namespace batchd::daemon {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr FileStamp kStamp{1000, 12345, 77};


TEST(SampleCacheAbuseTest, OneUidsTinyEntriesCannotFillTheIndexEveryoneShares) {
  // 8 MiB: an index of 1024 entries; the uid's share, 2 MiB, would hold 32,768 entries of 64 bytes.
  auto made = SampleCache::create({8 * kMiB, 2 * kMiB});
  ASSERT_TRUE(made.ok()) << made.error().message();
  auto& sut = *made.value();
  CachedShape shape;
  int admitted = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    auto f = sut.begin_fill({7, 1, i}, kStamp, shape, 3, 1000, /*uid_bounded=*/true);  // a 1x1 RGB image
    if (!f) continue;
    f->commit();
    ++admitted;
  }
  EXPECT_GT(admitted, 0);
  const CacheTotals t = sut.totals();
  EXPECT_LE(t.index_used, t.index_slots / 2) << "one uid took the index: everyone's fills are refused now";
  // A pipeline of the config (another user's stream) still gets entries.
  int others = 0;
  for (int64_t i = 0; i < 100; ++i) {
    auto f = sut.begin_fill({8, 2, i}, kStamp, shape, 150528, 1001, /*uid_bounded=*/false);
    if (!f) continue;
    f->commit();
    ++others;
  }
  EXPECT_GT(others, 30) << "refused_index " << sut.totals().refused_index;
}

}  // namespace
}  // namespace batchd::daemon
