// SampleCache across real processes sharing its memfd, as the daemon's workers do: a filler that dies mid-fill is
// reclaimed by its pid; max_bytes and max_bytes_per_uid bound what is live; processes filling and reading the same
// keys at once, with drops racing them, never read a torn entry (split from sample_cache_test.cc).
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

pid_t child_that_dies_filling(SampleCache& cache, const CacheKey& k) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto f = cache.begin_fill(k, kStamp, {}, size_of(k), 0, false);
    if (!f) ::_exit(3);
    write_pattern(k, f->bytes().first(f->bytes().size() / 2));
    ::_exit(0);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child could not claim an entry";
  return pid;
}

TEST(SampleCacheTest, AFillerThatDiedMidFillIsReclaimedByItsPid) {
  auto sut = make_cache(4 * kMiB);
  const uint64_t empty = sut->totals().live_bytes;
  const CacheKey k = key_of(7);
  const pid_t pid = child_that_dies_filling(*sut, k);
  EXPECT_FALSE(sut->find(k, kStamp)) << "a dead filler's entry is never read";
  ASSERT_EQ(sut->groups().size(), 1u);
  EXPECT_EQ(sut->groups()[0].filling, 1u);
  EXPECT_EQ(sut->totals().live_bytes, empty + (size_of(k) + 63) / 64 * 64);
  EXPECT_EQ(sut->reclaim_filler(pid + 100000), 0u) << "another pid reclaims nothing";
  EXPECT_EQ(sut->reclaim_filler(pid), size_of(k));
  EXPECT_EQ(sut->totals().live_bytes, empty);
  EXPECT_TRUE(sut->groups().empty());
  EXPECT_FALSE(sut->find(k, kStamp));
  EXPECT_EQ(sut->reclaim_filler(pid), 0u) << "once";
  ASSERT_TRUE(fill(*sut, k)) << "the redo fills it";
  EXPECT_TRUE(is_pattern(k, *read(*sut, k)));
}

TEST(SampleCacheTest, AChildForkedAfterItsParentFilledIsReclaimedByItsOwnPid) {
  auto sut = make_cache(4 * kMiB);
  const uint64_t before = sut->totals().live_bytes;
  ASSERT_TRUE(fill(*sut, key_of(1)));  // this process has a filler row now; the child inherits the pointer
  const uint64_t filled = sut->totals().live_bytes;
  ASSERT_GT(filled, before);
  const pid_t pid = child_that_dies_filling(*sut, key_of(2));
  EXPECT_EQ(sut->reclaim_filler(pid), size_of(key_of(2)));
  EXPECT_EQ(sut->totals().live_bytes, filled);
  ASSERT_TRUE(fill(*sut, key_of(3))) << "the parent's row is still its own";
  EXPECT_TRUE(read(*sut, key_of(1)) && read(*sut, key_of(3)));
}

TEST(SampleCacheTest, LiveBytesNeverExceedMaxBytesAndRefusalsAreCounted) {
  auto sut = make_cache(2 * kMiB);
  const uint64_t entry = 64 * 1024;
  int admitted = 0;
  for (int64_t i = 0; i < 100; ++i) {
    if (fill(*sut, key_of(i), 0, false, entry)) ++admitted;
    ASSERT_LE(sut->totals().live_bytes, 2 * kMiB) << "after fill " << i;
  }
  const CacheTotals t = sut->totals();
  EXPECT_GT(admitted, 20) << "most of 2 MiB holds 64 KiB entries";
  EXPECT_LT(admitted, 32);
  EXPECT_EQ(t.refused_full, static_cast<uint64_t>(100 - admitted));
  EXPECT_GT(t.live_bytes + entry, 2 * kMiB) << "admitted until full";
  EXPECT_TRUE(sut->find(key_of(0), kStamp)) << "fill once, never evict: the first ones stay";
  EXPECT_FALSE(sut->find(key_of(99), kStamp));
  sut->drop([](uint64_t, uint64_t) { return true; });
  EXPECT_TRUE(fill(*sut, key_of(1000), 0, false, entry)) << "a drop makes room";
}

TEST(SampleCacheTest, UidBoundedFillsStopAtTheUidsShareWhileOthersGoOn) {
  auto sut = make_cache(8 * kMiB, kMiB);
  const uint64_t entry = 64 * 1024;
  int bounded = 0;
  for (int64_t i = 0; i < 40; ++i) bounded += fill(*sut, key_of(i), 1000, true, entry) ? 1 : 0;
  EXPECT_EQ(bounded, 16) << "1 MiB of 64 KiB entries";
  EXPECT_EQ(sut->totals().refused_uid, 24u);
  int unbounded = 0;
  for (int64_t i = 40; i < 80; ++i) unbounded += fill(*sut, key_of(i), 1000, false, entry) ? 1 : 0;
  EXPECT_EQ(unbounded, 40) << "a config's pipeline draws on the whole cache, whoever owns the stream";
  int other = 0;
  for (int64_t i = 80; i < 100; ++i) other += fill(*sut, key_of(i), 1001, true, entry) ? 1 : 0;
  EXPECT_EQ(other, 16) << "another uid has a share of its own";
  CacheTotals t = sut->totals();
  EXPECT_EQ(t.refused_full, 0u);
  ASSERT_EQ(t.uid_bytes.size(), 2u);
  for (const auto& [uid, bytes] : t.uid_bytes) EXPECT_EQ(bytes, kMiB) << "uid " << uid;
  sut->drop([](uint64_t, uint64_t) { return true; });
  EXPECT_TRUE(sut->totals().uid_bytes.empty()) << "nothing is charged to anyone";
  EXPECT_TRUE(fill(*sut, key_of(200), 1000, true, entry)) << "the share is back";
}

// Processes fill and read the same keys at once while one drops everything now and then: whatever a reader copies
// and then validates is the entry's pattern, whole. Each child's exit status: 0 fine, 1 a torn or wrong entry
// read, 2 no hit at all (the test would prove nothing).
int reader_filler(SampleCache& cache, int seed, int keys, int rounds) {
  std::mt19937 rng(seed);
  int hits = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int n = 0; n < keys; ++n) {
      const CacheKey k = key_of(static_cast<int64_t>(rng() % keys));
      auto found = cache.find(k, kStamp);
      if (found) {
        std::vector<uint8_t> copy(found->bytes.begin(), found->bytes.end());
        if (!cache.still_valid(*found)) continue;
        if (!is_pattern(k, copy) || found->shape.label != k.sample) return 1;
        ++hits;
        continue;
      }
      CachedShape shape;
      shape.label = k.sample;
      auto f = cache.begin_fill(k, kStamp, shape, size_of(k), 0, false);
      if (!f) continue;
      const auto half = f->bytes().size() / 2;
      write_pattern(k, f->bytes());
      std::memset(f->bytes().data() + half, 0, f->bytes().size() - half);  // torn for a moment
      ::sched_yield();
      write_pattern(k, f->bytes());
      if (rng() % 16 != 0) f->commit();  // else abandoned, as after an error in the ops after the claim
    }
  }
  return hits > 0 ? 0 : 2;
}

TEST(SampleCacheTest, ConcurrentFillersReadersAndDropsNeverReadATornEntry) {
  auto sut = make_cache(8 * kMiB);
  const uint64_t empty = sut->totals().live_bytes;
  constexpr int kProcesses = 4, kKeys = 300, kRounds = 40;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(reader_filler(*sut, p + 1, kKeys, kRounds));
    pids.push_back(pid);
  }
  const pid_t dropper = ::fork();
  if (dropper == 0) {
    for (int i = 0; i < 20; ++i) {
      ::usleep(2000);
      sut->drop([](uint64_t, uint64_t) { return true; });
    }
    ::_exit(0);
  }
  pids.push_back(dropper);
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child " << pid << " died: status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << pid << (WEXITSTATUS(status) == 1 ? ": read a torn entry"
                                                                                       : ": never hit");
  }
  for (pid_t pid : pids) sut->reclaim_filler(pid);  // they all exited between fills: nothing is left filling
  for (const auto& g : sut->groups()) EXPECT_EQ(g.filling, 0u);
  EXPECT_LE(sut->totals().live_bytes, 8 * kMiB);
  sut->drop([](uint64_t, uint64_t) { return true; });
  EXPECT_EQ(sut->totals().live_bytes, empty) << "every byte of every entry accounted for, whoever released it";
  for (int64_t i = 0; i < kKeys; ++i) EXPECT_FALSE(sut->find(key_of(i), kStamp));
}

TEST(SampleCacheTest, TooSmallAMaxBytesIsRefusedNamingTheKey) {
  auto cache = SampleCache::create({1000, 0});
  ASSERT_FALSE(cache.ok());
  EXPECT_NE(cache.error().message().find("cache.max_bytes = 1000 is below 1 MiB"), std::string::npos)
      << cache.error().message();
}

}  // namespace
}  // namespace batchd::daemon
