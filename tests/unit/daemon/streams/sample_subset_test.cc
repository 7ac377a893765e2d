// SampleSubset and the sampler over it (OpenStream.subset): positions map to the subset's dataset indices, every
// index is read once per epoch across ranks, and a bad subset is refused naming the first bad index.
#include "streams/sample_subset.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "fake_workers.h"
#include "streams/plan.h"
#include "streams/sampler.h"

namespace batchd::daemon {
namespace {

wire::SampleSubset runs(std::initializer_list<std::pair<uint64_t, uint64_t>> list) {
  wire::SampleSubset s;
  for (auto [start, length] : list) {
    s.add_run_starts(start);
    s.add_run_lengths(length);
  }
  return s;
}

TEST(SampleSubsetTest, PositionsMapToTheRunsInOrder) {
  auto sut = SampleSubset::make(runs({{40, 1}, {3, 4}, {0, 1}, {99, 1}}), 100);
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  ASSERT_EQ((*sut)->size(), 7u);
  std::vector<int64_t> got;
  for (uint64_t p = 0; p < 7; ++p) got.push_back((*sut)->at(p));
  EXPECT_EQ(got, (std::vector<int64_t>{40, 3, 4, 5, 6, 0, 99}));
}

TEST(SampleSubsetTest, ABadSubsetIsRefusedNamingTheFirstBadIndexAndItsPosition) {
  auto error = [](const wire::SampleSubset& s) {
    auto r = SampleSubset::make(s, 100);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.error().message();
  };
  EXPECT_NE(error(runs({{0, 2}, {98, 5}})).find("subset index 100 (position 4 of the subset) is out of range for a "
                                                "dataset of 100 samples"), std::string::npos);
  EXPECT_NE(error(runs({{0, 1}, {250, 1}})).find("subset index 250 (position 1"), std::string::npos);
  EXPECT_NE(error(runs({})).find("empty"), std::string::npos);
  EXPECT_NE(error(runs({{5, 0}})).find("length 0"), std::string::npos);
  EXPECT_NE(error(runs({{0, 100}, {0, 1}})).find("more than the dataset's 100 samples"), std::string::npos);
  wire::SampleSubset uneven = runs({{0, 1}});
  uneven.add_run_starts(4);
  EXPECT_NE(error(uneven).find("one length per start"), std::string::npos);
}

TEST(SampleSubsetTest, TheSamplerShufflesAndShardsTheSubsetAndReadsEachIndexOncePerEpoch) {
  auto subset = SampleSubset::make(runs({{500, 20}, {7, 1}, {9000, 9}}), 10000);  // 30 indices
  ASSERT_TRUE(subset.ok());
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 30; ++i) expected.push_back((*subset)->at(static_cast<uint64_t>(i)));
  std::sort(expected.begin(), expected.end());
  for (uint64_t epoch : {0u, 1u}) {
    std::vector<int64_t> all, first_rank;
    for (uint32_t rank = 0; rank < 3; ++rank) {
      auto sut = Sampler::make({30, 4, true, 7, rank, 3, false, *subset});
      ASSERT_TRUE(sut.ok()) << sut.error().message();
      EXPECT_EQ(sut->samples_per_epoch(), 10u);
      auto mine = sut->epoch_indices(epoch);
      if (rank == 0) first_rank = mine;
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, expected) << "epoch " << epoch;
    EXPECT_NE(first_rank, std::vector<int64_t>(expected.begin(), expected.begin() + 10)) << "shuffled";
  }
}

TEST(SampleSubsetTest, PlanSizesTheStreamByTheSubsetAndRefusesAnIndexPastTheDataset) {
  const DatasetRegistry datasets = testing::fmnist_registry();  // 10,000 samples
  wire::OpenStream r = testing::fmnist_u8_request(4, 2);
  *r.mutable_subset() = runs({{9990, 10}, {0, 3}});
  auto p = plan(r, PlanContext{}, datasets);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.subset_size(), 13u);
  EXPECT_EQ(p->opened.dataset_size(), 10000u);
  EXPECT_EQ(p->opened.samples_per_epoch(), 13u);
  EXPECT_EQ(p->opened.batches_per_epoch(), 4u);
  EXPECT_EQ(p->sampler.epoch_indices(0).front(), 9990);
  *r.mutable_subset() = runs({{9995, 6}});
  auto bad = plan(r, PlanContext{}, datasets);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("subset index 10000 (position 5"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace batchd::daemon
