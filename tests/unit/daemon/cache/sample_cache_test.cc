// SampleCache (cache/sample_cache.h) in this process and in forked ones (real processes sharing its memfd, as the
// daemon's workers do): find / fill / commit; a fill destroyed uncommitted, a stale file stamp and a drop are never
// read; a filler that dies mid-fill is reclaimed by its pid; max_bytes and max_bytes_per_uid bound what is live; and
// processes filling and reading the same keys at once, with drops racing them, never read a torn entry.
#include "cache/sample_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

#include "base/splitmix64.h"

#include "sample_cache_test_support.h"

namespace batchd::daemon {
namespace {

using namespace cache_test;  // NOLINT

TEST(SampleCacheTest, AFilledEntryIsFoundOnlyOnceCommittedWithItsBytesShapeAndLabel) {
  auto sut = make_cache(4 * kMiB);
  const uint64_t empty = sut->totals().live_bytes;
  const CacheKey k = key_of(5);
  EXPECT_FALSE(sut->find(k, kStamp));
  CachedShape shape;
  shape.kind = 1;
  shape.height = 10;
  shape.width = 20;
  shape.label = 3;
  auto f = sut->begin_fill(k, kStamp, shape, size_of(k), 0, false);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->bytes().size(), size_of(k));
  write_pattern(k, f->bytes());
  EXPECT_FALSE(sut->find(k, kStamp)) << "a filling entry is never read";
  ASSERT_EQ(sut->groups().size(), 1u);
  EXPECT_EQ(sut->groups()[0].filling, 1u);
  f->commit();
  auto found = sut->find(k, kStamp);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->shape.label, 3);
  EXPECT_EQ(found->shape.height, 10u);
  EXPECT_EQ(found->shape.width, 20u);
  EXPECT_TRUE(sut->still_valid(*found));
  EXPECT_TRUE(is_pattern(k, *read(*sut, k)));
  EXPECT_EQ(sut->totals().live_bytes, empty + (size_of(k) + 63) / 64 * 64);
  EXPECT_FALSE(sut->find(key_of(5, 2), kStamp)) << "another dataset's key";
  EXPECT_FALSE(sut->find({1, 43, 5}, kStamp)) << "another prefix's key";
  const auto groups = sut->groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].entries, 1u);
  EXPECT_EQ(groups[0].bytes, size_of(k));
  EXPECT_EQ(groups[0].filling, 0u);
}

TEST(SampleCacheTest, AFillDestroyedUncommittedIsNeverFoundAndItsBytesGoBack) {
  auto sut = make_cache(4 * kMiB);
  const uint64_t empty = sut->totals().live_bytes;
  const CacheKey k = key_of(9);
  {
    auto f = sut->begin_fill(k, kStamp, {}, size_of(k), 0, false);
    ASSERT_TRUE(f);
    write_pattern(k, f->bytes());
  }  // an error in the ops after the claim
  EXPECT_FALSE(sut->find(k, kStamp));
  EXPECT_EQ(sut->totals().live_bytes, empty);
  EXPECT_GT(sut->totals().dropped_bytes, 0u);
  EXPECT_TRUE(sut->groups().empty());
  ASSERT_TRUE(fill(*sut, k)) << "the key can be filled again";
  EXPECT_TRUE(is_pattern(k, *read(*sut, k)));
}

TEST(SampleCacheTest, AnEntryOfAnotherVersionOfTheFileIsAMissAndIsDropped) {
  auto sut = make_cache(4 * kMiB);
  const uint64_t empty = sut->totals().live_bytes;
  const CacheKey k = key_of(1);
  for (FileStamp changed : {FileStamp{1001, 12345, 77}, FileStamp{1000, 12346, 77}, FileStamp{1000, 12345, 78}}) {
    ASSERT_TRUE(fill(*sut, k));  // a fresh entry for each version tried: the stale one is dropped by the miss
    EXPECT_FALSE(sut->find(k, changed)) << "size, mtime or inode changed";
    EXPECT_FALSE(sut->find(k, kStamp)) << "the stale entry was dropped, not kept for the old stamp";
    EXPECT_EQ(sut->totals().live_bytes, empty);
  }
}

TEST(SampleCacheTest, ASampleReadyOrBeingFilledIsNotFilledTwice) {
  auto sut = make_cache(4 * kMiB);
  const CacheKey k = key_of(3);
  auto first = sut->begin_fill(k, kStamp, {}, 1000, 0, false);
  ASSERT_TRUE(first);
  EXPECT_FALSE(sut->begin_fill(k, kStamp, {}, 1000, 0, false)) << "being filled by another worker";
  first->commit();
  EXPECT_FALSE(sut->begin_fill(k, kStamp, {}, 1000, 0, false)) << "ready";
  EXPECT_EQ(sut->groups().size(), 1u);
  EXPECT_EQ(sut->groups()[0].entries, 1u);
}

TEST(SampleCacheTest, ADropMakesACopyInvalidAndSelectsByDatasetAndPrefix) {
  auto sut = make_cache(4 * kMiB);
  const uint64_t empty = sut->totals().live_bytes;
  for (int64_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(fill(*sut, key_of(i, 1)));
    ASSERT_TRUE(fill(*sut, key_of(i, 2)));
  }
  auto found = sut->find(key_of(3, 1), kStamp);
  ASSERT_TRUE(found);
  EXPECT_TRUE(sut->still_valid(*found));
  uint64_t of_1 = 0, of_2 = 0;
  for (int64_t i = 0; i < 10; ++i) {
    of_1 += size_of(key_of(i, 1));
    of_2 += size_of(key_of(i, 2));
  }
  EXPECT_EQ(sut->drop([](uint64_t dataset, uint64_t) { return dataset == 1; }).second, of_1);
  EXPECT_FALSE(sut->still_valid(*found)) << "a copy taken before the drop is not the entry's";
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_FALSE(sut->find(key_of(i, 1), kStamp));
    EXPECT_TRUE(read(*sut, key_of(i, 2))) << "dataset 2 is kept";
  }
  EXPECT_EQ(sut->drop([](uint64_t, uint64_t prefix) { return prefix == 42; }).second, of_2);
  EXPECT_EQ(sut->totals().live_bytes, empty);
  EXPECT_TRUE(sut->groups().empty());
}

// A real child process claims an entry, writes half of it and exits without committing (as a SIGKILLed worker
// would: no destructor runs); the daemon's reclaim_filler(pid) after reaping it drops the entry.
}  // namespace
}  // namespace batchd::daemon
