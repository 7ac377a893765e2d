// The sample cache under churn (issue 43, 7): a user who owns a dataset's files touches them each epoch of a cached
// stream, so that its entries are dropped (their file changed) and filled again. Dropped entries' index slots and
// byte ranges are reused (a reader that copied from one sees its generation change), the daemon's cleaner keeps
// segments free when live entries are scattered over all of them, a refused fill touches no memory, and a uid's
// churned bytes stay charged to it for kChurnCredit. Before: after about 60 rounds every fill of every user was
// refused until restart, and dead entries filled the 64-slot probe chains.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "cache/sample_cache.h"
#include "base/splitmix64.h"

namespace batchd::daemon {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kEntry = 64 * 1024;
using Clock = std::chrono::steady_clock;

FileStamp stamp_of(int64_t version) { return FileStamp{1000, 12345 + version, 77}; }

bool fill(SampleCache& cache, const CacheKey& k, const FileStamp& stamp, uint64_t bytes = kEntry, uint32_t uid = 0,
          bool bounded = false) {
  auto f = cache.begin_fill(k, stamp, CachedShape{}, bytes, uid, bounded);
  if (!f) return false;
  f->bytes()[0] = static_cast<uint8_t>(k.sample);
  f->commit();
  return true;
}

// A user touches the file: the next read of the entry sees another stamp, misses, and drops it.
void touch(SampleCache& cache, const CacheKey& k, const FileStamp& now) { EXPECT_FALSE(cache.find(k, now)); }

std::unique_ptr<SampleCache> make(uint64_t max_bytes, uint64_t per_uid) {
  auto made = SampleCache::create({max_bytes, per_uid});
  EXPECT_TRUE(made.ok()) << made.error().message();
  return std::move(made).value();
}

TEST(SampleCacheChurnTest, AFileTouchedEveryEpochNeverUsesUpTheCache) {
  auto sut = make(4 * kMiB, kMiB);
  int first = 0;
  for (int64_t round = 0; round < 300; ++round) {
    int admitted = 0;
    for (int64_t i = 0; i < 64; ++i) {
      if (round > 0) touch(*sut, {1, 2, i}, stamp_of(round));
      admitted += fill(*sut, {1, 2, i}, stamp_of(round)) ? 1 : 0;
    }
    if (round == 0) first = admitted;
    ASSERT_EQ(admitted, first) << "round " << round << ": " << sut->totals().refused_full << " refused";
    sut->clean(Clock::now());
    const CacheTotals t = sut->totals();
    ASSERT_LE(t.live_bytes, 4 * kMiB);
    ASSERT_LE(t.resident_bytes, 4 * kMiB + kMiB / 2) << "round " << round;
  }
  EXPECT_GT(first, 40) << "most of 4 MiB holds 64 KiB entries";
}

TEST(SampleCacheChurnTest, LiveEntriesScatteredOverEverySegmentAreEvictedSoThatFillsGoOn) {
  // Each round a churned dataset's 40 entries are filled with one new entry of another dataset among them, then
  // touched: the other dataset's entries would hold every segment (one each) and no fill could be placed.
  auto sut = make(8 * kMiB, 8 * kMiB);
  for (int64_t round = 0; round < 200; ++round) {
    for (int64_t i = 0; i < 40; ++i) {
      if (round > 0) touch(*sut, {1, 2, i}, stamp_of(round));
      ASSERT_TRUE(fill(*sut, {1, 2, i}, stamp_of(round))) << "round " << round << " sample " << i << ": "
                                                          << sut->totals().segments_free << " segments free";
      if (i == 20) fill(*sut, {9, 2, round}, stamp_of(0));  // another user's new sample: it stays
    }
    for (int n = 0; n < 3; ++n) sut->clean(Clock::now());
  }
  const CacheTotals t = sut->totals();
  EXPECT_GT(t.evicted_bytes, 0u) << "the cleaner freed segments";
  EXPECT_GE(t.segments_free, t.segments / 4);
  EXPECT_LE(t.resident_bytes, 8 * kMiB);
  EXPECT_TRUE(sut->find({9, 2, 199}, stamp_of(0))) << "the newest entries stay";
}

TEST(SampleCacheChurnTest, ACopyFromAnEntryWhoseSlotWasReusedIsNotValid) {
  auto sut = make(4 * kMiB, kMiB);
  ASSERT_TRUE(fill(*sut, {1, 2, 3}, stamp_of(1)));
  auto found = sut->find({1, 2, 3}, stamp_of(1));
  ASSERT_TRUE(found);
  touch(*sut, {1, 2, 3}, stamp_of(2));
  ASSERT_TRUE(fill(*sut, {1, 2, 3}, stamp_of(2))) << "the same sample's new version takes the dropped slot";
  auto again = sut->find({1, 2, 3}, stamp_of(2));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->slot, found->slot) << "the dropped slot is reused";
  EXPECT_FALSE(sut->still_valid(*found)) << "ready again, but another generation: the old copy is not the entry";
  EXPECT_TRUE(sut->still_valid(*again));
}

// Samples of dataset 1 whose home slot is the same, in a cache of `slots` slots (cache/sample_cache.cc home_slot).
std::vector<int64_t> colliding(uint64_t slots, size_t n) {
  std::vector<int64_t> out;
  for (int64_t s = 0; out.size() < n; ++s) {
    const uint64_t h = SplitMix64::mix(1 ^ SplitMix64::mix(2 ^ SplitMix64::mix(static_cast<uint64_t>(s))));
    if ((h & (slots - 1)) == 7) out.push_back(s);
  }
  return out;
}

TEST(SampleCacheChurnTest, DroppedEntriesNeverFillAProbeChainAndARefusedFillTouchesNoMemory) {
  auto sut = make(32 * kMiB, 32 * kMiB);
  const auto keys = colliding(sut->totals().index_slots, 65);
  for (size_t i = 0; i < 64; ++i) ASSERT_TRUE(fill(*sut, {1, 2, keys[i]}, stamp_of(0), 4096)) << i;
  const uint64_t resident = sut->totals().resident_bytes;
  EXPECT_FALSE(fill(*sut, {1, 2, keys[64]}, stamp_of(0), 4 * kMiB)) << "64 live entries before it: no slot";
  EXPECT_EQ(sut->totals().refused_index, 1u);
  EXPECT_EQ(sut->totals().resident_bytes, resident) << "the refused fill populated memory it never used";
  for (int64_t round = 1; round <= 20; ++round) {
    for (size_t i = 0; i < 64; ++i) {
      touch(*sut, {1, 2, keys[i]}, stamp_of(round));
      ASSERT_TRUE(fill(*sut, {1, 2, keys[i]}, stamp_of(round), 4096)) << "round " << round << " key " << i;
    }
  }
  EXPECT_EQ(sut->totals().index_used, 64u) << "dropped entries are not in use";
}

TEST(SampleCacheChurnTest, AUidsChurnedBytesStayChargedUntilCreditedSoItRefillsAtMostItsSharePerCredit) {
  auto sut = make(16 * kMiB, kMiB);
  const auto t0 = Clock::now();
  int admitted = 0;
  for (int64_t i = 0; i < 16; ++i) admitted += fill(*sut, {1, 2, i}, stamp_of(0), kEntry, 1000, true) ? 1 : 0;
  ASSERT_EQ(admitted, 16) << "1 MiB of 64 KiB entries";
  for (int64_t i = 0; i < 16; ++i) touch(*sut, {1, 2, i}, stamp_of(1));
  EXPECT_EQ(sut->totals().churn_bytes, kMiB);
  EXPECT_FALSE(fill(*sut, {1, 2, 0}, stamp_of(1), kEntry, 1000, true)) << "its share is still its churn's";
  EXPECT_TRUE(fill(*sut, {1, 2, 0}, stamp_of(1), kEntry, 1001, true)) << "another uid's share is its own";
  sut->clean(t0);
  sut->clean(t0 + kChurnCredit / 2);
  EXPECT_FALSE(fill(*sut, {1, 2, 1}, stamp_of(1), kEntry, 1000, true)) << "not credited before kChurnCredit";
  sut->clean(t0 + kChurnCredit);
  EXPECT_EQ(sut->totals().churn_bytes, 0u);
  EXPECT_TRUE(fill(*sut, {1, 2, 1}, stamp_of(1), kEntry, 1000, true)) << "credited back";
  sut->drop([](uint64_t, uint64_t) { return true; });
  EXPECT_TRUE(sut->totals().uid_bytes.empty()) << "nothing left charged to anyone";
}

}  // namespace
}  // namespace batchd::daemon
