#include "streams/sampler.h"

#include "streams/index_permutation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace batchd::daemon {
namespace {

Sampler make(uint64_t n, uint32_t batch, bool shuffle, uint32_t rank, uint32_t world, bool drop_last,
             uint64_t seed = 0) {
  auto s = Sampler::make({n, batch, shuffle, seed, rank, world, drop_last, nullptr, drop_last});  // both, as before
  EXPECT_TRUE(s.ok()) << s.error().message();
  return std::move(s).value();
}

TEST(SamplerTest, PermutationIsAPermutationFixedBySeedAndEpoch) {
  const auto p = Sampler::permutation(1000, 7, 3);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(p, Sampler::permutation(1000, 7, 3));
  EXPECT_NE(p, Sampler::permutation(1000, 7, 4)) << "a new epoch must reshuffle";
  EXPECT_NE(p, Sampler::permutation(1000, 8, 3)) << "a new seed must reshuffle";
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(p, identity);
}

// Issue 43 (2): the shuffle is taken one index at a time (index_permutation.h), so any size costs O(batch).
TEST(SamplerTest, IndexPermutationIsABijectionForEverySizeAndTakesNoMemory) {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 64ull, 1000ull, 4097ull, (1ull << 16) + 1}) {
    const IndexPermutation perm(n, 11, 2);
    std::vector<bool> hit(n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t v = perm.at(i);
      ASSERT_LT(v, n);
      ASSERT_FALSE(hit[v]) << "n " << n << ": " << v << " twice";
      hit[v] = true;
    }
  }
  // len 2^40 (a user's own Dataset may say so): a batch of positions anywhere in the epoch, at once.
  auto s = Sampler::make({uint64_t{1} << 40, 256, true, 9, 1, 4, false});
  ASSERT_TRUE(s.ok()) << s.error().message();
  std::vector<int64_t> batch(256);
  s->indices(3, s->samples_per_epoch() - 256, batch);
  std::set<int64_t> distinct(batch.begin(), batch.end());
  EXPECT_EQ(distinct.size(), 256u);
  EXPECT_GT(*distinct.rbegin(), int64_t{1} << 38) << "spread over the whole range";
  EXPECT_LT(*distinct.rbegin(), int64_t{1} << 40);
}

TEST(SamplerTest, IndicesOfAnyRangeAreWhatTheEpochHolds) {
  for (bool shuffle : {false, true}) {
    auto s = Sampler::make({103, 8, shuffle, 5, 2, 3, false, nullptr, false, 2});
    ASSERT_TRUE(s.ok()) << s.error().message();
    const auto all = s->epoch_indices(4);
    std::vector<int64_t> part(17);
    s->indices(4, 30, part);
    EXPECT_EQ(part, std::vector<int64_t>(all.begin() + 30, all.begin() + 47));
  }
}

TEST(SamplerTest, ShuffledPositionsAreRoughlyUniform) {
  // Where does index 0 land over many epochs? Each of 10 buckets should get ~10% (chi-square, generous bound).
  std::vector<int> buckets(10);
  const int trials = 5000;
  for (int e = 0; e < trials; ++e) {
    const auto p = Sampler::permutation(100, 1, e);
    const auto pos = std::find(p.begin(), p.end(), 0) - p.begin();
    ++buckets[pos / 10];
  }
  double chi2 = 0;
  for (int b : buckets) chi2 += (b - trials / 10.0) * (b - trials / 10.0) / (trials / 10.0);
  EXPECT_LT(chi2, 30.0);  // 9 degrees of freedom: p < 0.001 at 27.9
}

// Expected values are torch.utils.data.DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False,
// drop_last=...) as printed by torch 1.13.
TEST(SamplerTest, ShardsLikeDistributedSamplerWithPadding) {
  EXPECT_EQ(make(10, 1, false, 0, 3, false).epoch_indices(0), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(make(10, 1, false, 1, 3, false).epoch_indices(0), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(make(10, 1, false, 2, 3, false).epoch_indices(0), (std::vector<int64_t>{2, 5, 8, 1}));
}

TEST(SamplerTest, ShardsLikeDistributedSamplerWithDropLast) {
  EXPECT_EQ(make(10, 1, false, 0, 3, true).epoch_indices(0), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(make(10, 1, false, 1, 3, true).epoch_indices(0), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(make(10, 1, false, 2, 3, true).epoch_indices(0), (std::vector<int64_t>{2, 5, 8}));
}

TEST(SamplerTest, RanksTogetherCoverEveryIndexExactlyOnceWhenDivisible) {
  for (bool shuffle : {false, true}) {
    std::map<int64_t, int> seen;
    for (uint32_t r = 0; r < 4; ++r) {
      for (int64_t i : make(1000, 32, shuffle, r, 4, false, 42).epoch_indices(5)) ++seen[i];
    }
    ASSERT_EQ(seen.size(), 1000u);
    for (const auto& [i, count] : seen) ASSERT_EQ(count, 1) << "index " << i;
  }
}

TEST(SamplerTest, PaddingRepeatsTheHeadOnlyAsMuchAsNeeded) {
  std::map<int64_t, int> seen;
  for (uint32_t r = 0; r < 3; ++r) {
    for (int64_t i : make(1000, 32, true, r, 3, false, 9).epoch_indices(0)) ++seen[i];
  }
  EXPECT_EQ(seen.size(), 1000u);  // every index at least once
  int duplicates = 0;
  for (const auto& [i, count] : seen) duplicates += count - 1;
  EXPECT_EQ(duplicates, 2);  // 3 * ceil(1000/3) - 1000
}

TEST(SamplerTest, TinyDatasetPadsRepeatedlyLikeTorch) {
  // DistributedSampler(range(2), num_replicas=5): indices [0,1] padded to [0,1,0,1,0].
  std::vector<int64_t> all;
  for (uint32_t r = 0; r < 5; ++r) all.push_back(make(2, 1, false, r, 5, false).epoch_indices(0).at(0));
  EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 0, 1, 0}));
}

TEST(SamplerTest, BatchesAndDropLastOfTheLastIncompleteBatch) {
  auto keep = make(10, 4, false, 0, 1, false);
  EXPECT_EQ(keep.batches_per_epoch(), 3u);
  EXPECT_EQ(keep.batch_range(2), (std::pair<uint64_t, uint64_t>{8, 10}));
  auto drop = make(10, 4, false, 0, 1, true);
  EXPECT_EQ(drop.batches_per_epoch(), 2u);
  EXPECT_EQ(drop.batch_range(1), (std::pair<uint64_t, uint64_t>{4, 8}));
}

TEST(SamplerTest, SameSeedAndEpochGiveTheSameOrderOnEveryRankAndInstance) {
  // Ranks must agree on the permutation without talking to each other: the union of two independently made
  // samplers' shards is still exactly-once.
  auto r0 = make(101, 10, true, 0, 2, true, 123).epoch_indices(7);
  auto r1 = make(101, 10, true, 1, 2, true, 123).epoch_indices(7);
  std::set<int64_t> both(r0.begin(), r0.end());
  both.insert(r1.begin(), r1.end());
  EXPECT_EQ(both.size(), r0.size() + r1.size());
  EXPECT_EQ(r0.size(), 50u);
}

TEST(SamplerTest, TheRanksTailAndTheLastBatchAreDroppedEachByItsOwnSwitch) {
  // 10 samples, 3 ranks, batches of 2: DistributedSampler gives ceil(10/3) = 4 (padded) or floor = 3 (drop_last)
  // per rank; DataLoader then cuts 4 into [2, 2] and 3 into [2, 1], or [2] with its own drop_last.
  struct Case { bool ranks_tail, last_batch; uint64_t samples, batches; };
  for (const Case c : {Case{false, false, 4, 2}, Case{true, false, 3, 2}, Case{false, true, 4, 2},
                       Case{true, true, 3, 1}}) {
    auto sut = Sampler::make({10, 2, false, 0, 1, 3, c.ranks_tail, nullptr, c.last_batch});
    ASSERT_TRUE(sut.ok()) << sut.error().message();
    EXPECT_EQ(sut->samples_per_epoch(), c.samples) << c.ranks_tail << c.last_batch;
    EXPECT_EQ(sut->batches_per_epoch(), c.batches) << c.ranks_tail << c.last_batch;
    EXPECT_EQ(sut->epoch_indices(0).size(), c.samples);
  }
  auto kept = Sampler::make({10, 2, false, 0, 1, 3, true, nullptr, false});
  EXPECT_EQ(kept->batch_range(1), (std::pair<uint64_t, uint64_t>{2, 3})) << "the short batch is delivered";
}

TEST(SamplerTest, RejectsBadOptionsWithReasons) {
  auto bad_rank = Sampler::make({10, 1, false, 0, 3, 3, false});
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_NE(bad_rank.error().message().find("rank 3"), std::string::npos);
  EXPECT_FALSE(Sampler::make({0, 1, false, 0, 0, 1, false}).ok());
  EXPECT_FALSE(Sampler::make({10, 0, false, 0, 0, 1, false}).ok());
  auto empty = Sampler::make({10, 20, false, 0, 0, 1, false, nullptr, true});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("no batches"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon

namespace batchd::daemon {
namespace {

TEST(SamplerTest, HugeWorldSizeCostsMemoryPerRankOnly) {
  // 2^20 ranks over 10 samples: each rank reads one (padded) sample; nothing of size world_size is built.
  auto s = make(10, 1, true, (1u << 20) - 1, 1u << 20, false, 1);
  EXPECT_EQ(s.samples_per_epoch(), 1u);
  const auto mine = s.epoch_indices(0);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0], Sampler::permutation(10, 1, 0)[((1u << 20) - 1) % 10]);
}

}  // namespace
}  // namespace batchd::daemon
