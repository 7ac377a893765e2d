// Repeated augmentation (sampler.h: repeated_aug, selected_samples): the sampler's lists and copy numbers, the plan
// of an OpenStream asking for it, the tasks a stream hands out (resumed or not), and a share that differs in it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <set>
#include <vector>

#include "fake_workers.h"
#include "streams/plan.h"
#include "streams/sampler.h"
#include "streams/stream.h"

namespace batchd::daemon {
namespace {

Sampler make(uint64_t n, uint32_t k, uint32_t rank, uint32_t world, bool shuffle = false, bool drop_last = false,
             uint64_t selected = 0, uint32_t batch = 1) {
  auto s = Sampler::make({n, batch, shuffle, 5, rank, world, drop_last, nullptr, drop_last, k, selected});
  EXPECT_TRUE(s.ok()) << s.error().message();
  return std::move(s).value();
}

std::vector<uint32_t> copies_of(const Sampler& s) {
  std::vector<uint32_t> out;
  for (uint64_t p = 0; p < s.samples_per_epoch(); ++p) out.push_back(s.copy_at(p));
  return out;
}

TEST(RepeatedAugSamplerTest, EveryIndexKTimesPerEpochAcrossRanksWhenTheListDivides) {
  const uint64_t n = 600;  // n * K divides by every world size below
  for (bool shuffle : {false, true}) {
    for (uint32_t k : {2u, 3u, 4u}) {
      for (uint32_t w : {1u, 2u, 4u, 6u}) {
        std::map<int64_t, int> seen;
        for (uint32_t r = 0; r < w; ++r) {
          const Sampler s = make(n, k, r, w, shuffle);
          ASSERT_EQ(s.samples_per_epoch(), n * k / w);
          for (int64_t i : s.epoch_indices(3)) ++seen[i];
        }
        ASSERT_EQ(seen.size(), n) << "K " << k << " w " << w;
        for (const auto& [i, count] : seen) ASSERT_EQ(count, static_cast<int>(k)) << "index " << i;
      }
    }
  }
}

TEST(RepeatedAugSamplerTest, TheCopiesOfAnIndexLandOnKDifferentRanksWithCopyNumbers0ToKMinus1) {
  const uint64_t n = 400;
  const uint32_t k = 3;
  for (uint32_t w : {3u, 4u, 8u}) {  // world_size >= K; 1200 divides by each
    std::map<int64_t, std::set<uint32_t>> ranks, copies;
    for (uint32_t r = 0; r < w; ++r) {
      const Sampler s = make(n, k, r, w, /*shuffle=*/true);
      const auto mine = s.epoch_indices(1);
      for (uint64_t p = 0; p < mine.size(); ++p) {
        ranks[mine[p]].insert(r);
        copies[mine[p]].insert(s.copy_at(p));
      }
    }
    ASSERT_EQ(ranks.size(), n);
    for (const auto& [i, on] : ranks) ASSERT_EQ(on.size(), k) << "index " << i << ", world_size " << w;
    for (const auto& [i, c] : copies) ASSERT_EQ(c, (std::set<uint32_t>{0, 1, 2})) << "index " << i;
  }
}

// RASampler(range(5), num_replicas=4, rank=r, shuffle=False, repetitions=3)'s list before its num_selected cut:
// [0,0,0,1,1,1,2,2,2,3,3,3,4,4,4] padded with its head to 16, then positions r, r+4, ... (computed with torch 1.13's
// repeat_interleave and slicing, the references' steps). The padded entry (rank 3's last) repeats copy 0 of index 0.
TEST(RepeatedAugSamplerTest, ListsAndPaddingAsRASampler) {
  const std::vector<std::vector<int64_t>> lists = {{0, 1, 2, 4}, {0, 1, 3, 4}, {0, 2, 3, 4}, {1, 2, 3, 0}};
  const std::vector<std::vector<uint32_t>> copies = {{0, 1, 2, 0}, {1, 2, 0, 1}, {2, 0, 1, 2}, {0, 1, 2, 0}};
  for (uint32_t r = 0; r < 4; ++r) {
    const Sampler s = make(5, 3, r, 4);
    EXPECT_EQ(s.samples_per_epoch(), 4u);  // ceil(5 * 3 / 4)
    EXPECT_EQ(s.epoch_indices(0), lists[r]) << "rank " << r;
    EXPECT_EQ(copies_of(s), copies[r]) << "rank " << r;
  }
}

TEST(RepeatedAugSamplerTest, DropLastTruncatesTheRepeatedListAsDistributedSamplerDoes) {
  const std::vector<std::vector<int64_t>> lists = {{0, 1, 2}, {0, 1, 3}, {0, 2, 3}, {1, 2, 3}};  // floor(15 / 4)
  for (uint32_t r = 0; r < 4; ++r) EXPECT_EQ(make(5, 3, r, 4, false, true).epoch_indices(0), lists[r]);
}

TEST(RepeatedAugSamplerTest, SelectedSamplesCutsEachRanksEpochToItsHead) {
  const Sampler whole = make(100, 3, 1, 4, true);
  const Sampler cut = make(100, 3, 1, 4, true, false, /*selected=*/25, /*batch=*/10);
  EXPECT_EQ(cut.samples_per_epoch(), 25u);
  EXPECT_EQ(cut.batches_per_epoch(), 3u);  // 10 + 10 + 5
  const auto head = whole.epoch_indices(2);
  EXPECT_EQ(cut.epoch_indices(2), std::vector<int64_t>(head.begin(), head.begin() + 25));
  EXPECT_EQ(make(100, 3, 1, 4, true, true, 25, 10).batches_per_epoch(), 2u) << "drop_last drops the short batch";
  EXPECT_EQ(make(100, 3, 1, 4, true, false, 1000).samples_per_epoch(), 75u) << "a cut past the share: the share";
}

TEST(RepeatedAugSamplerTest, OneIsOffAndTheSamplerIsAsBefore) {
  for (bool shuffle : {false, true}) {
    for (uint32_t r = 0; r < 3; ++r) {
      auto before = Sampler::make({10, 4, shuffle, 5, r, 3, false});
      ASSERT_TRUE(before.ok());
      const Sampler off = make(10, 1, r, 3, shuffle);
      EXPECT_EQ(off.epoch_indices(4), before->epoch_indices(4));
      EXPECT_EQ(copies_of(off), std::vector<uint32_t>(off.samples_per_epoch(), 0));
    }
  }
}

TEST(RepeatedAugSamplerTest, RepeatsOutOfRangeAreRefusedNamingTheRange) {
  for (uint32_t k : {0u, kMaxRepeatedAug + 1}) {
    auto s = Sampler::make({10, 1, false, 0, 0, 1, false, nullptr, false, k});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message().find("repeated_aug " + std::to_string(k) + " is out of range [1, 16]"),
              std::string::npos) << s.error().message();
  }
}

class RepeatedAugPlanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { datasets_ = new DatasetRegistry(testing::fmnist_registry()); }
  static void TearDownTestSuite() { delete datasets_; }
  static wire::OpenStream request(uint32_t repeats, uint64_t selected = 0) {
    wire::OpenStream r = testing::fmnist_u8_request(100, 4);  // 10,000 samples
    r.set_world_size(4);
    r.set_rank(3);
    r.mutable_repeated_aug()->set_repeats(repeats);
    r.mutable_repeated_aug()->set_selected_samples(selected);
    return r;
  }
  static DatasetRegistry* datasets_;
  PlanContext context_;
};
DatasetRegistry* RepeatedAugPlanTest::datasets_ = nullptr;

TEST_F(RepeatedAugPlanTest, TheEpochIsKSharesLongAndZeroOrOneIsOff) {
  for (auto [repeats, samples] : std::vector<std::pair<uint32_t, uint64_t>>{{0, 2500}, {1, 2500}, {3, 7500}}) {
    auto r = request(repeats);
    r.set_dry_run(true);
    auto p = plan(r, context_, *datasets_);
    ASSERT_TRUE(p.ok()) << p.error().message();
    EXPECT_EQ(p->opened.samples_per_epoch(), samples) << "repeats " << repeats;
    EXPECT_EQ(p->sampler.repeated_aug(), std::max(repeats, 1u));
  }
  auto cut = plan(request(3, 2502), context_, *datasets_);  // RASampler: floor(10000 // 256 * 256 / 4)
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->opened.samples_per_epoch(), 2502u);
  EXPECT_EQ(cut->opened.batches_per_epoch(), 26u);
  auto resumed = request(3);
  resumed.set_start_batch(74);
  EXPECT_TRUE(plan(resumed, context_, *datasets_).ok()) << "batch 74 of 75 is in the epoch";
  resumed.set_start_batch(75);
  EXPECT_FALSE(plan(resumed, context_, *datasets_).ok());
  auto bad = plan(request(17), context_, *datasets_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("repeated_aug 17 is out of range"), std::string::npos);
}

// The tasks a stream hands out carry each position's copy number (WorkerTask.copies), and a stream resumed at
// start_batch hands out the same indices and copies for that batch as one that read up to it.
class RepeatedAugStreamTest : public ::testing::Test {
 protected:
  std::unique_ptr<Stream> make_stream(uint64_t start_batch, uint32_t repeats) {
    wire::OpenStream r = testing::fmnist_u8_request(8, 2);
    r.set_dataset("fmnist");
    r.set_shuffle(true);
    r.set_world_size(2);
    r.set_rank(1);
    r.set_start_batch(start_batch);
    r.mutable_repeated_aug()->set_repeats(repeats);
    auto p = plan(r, PlanContext{}, datasets_);
    EXPECT_TRUE(p.ok()) << p.error().message();
    auto segment = pool_.create(&*p, ::geteuid());
    EXPECT_TRUE(segment.ok()) << segment.error().message();
    return std::make_unique<Stream>(Peer{}, std::move(p).value(), std::move(segment).value(),
                                    ChunkPolicy{.workers = 1});
  }

  DatasetRegistry datasets_ = testing::fmnist_registry();
  SegmentPool pool_{std::move(SegmentInstance::claim()).value(), 1 << 24};
};

TEST_F(RepeatedAugStreamTest, TasksCarryEachPositionsCopyAndAResumedStreamTheSameOnes) {
  auto fresh = make_stream(0, 3);
  auto first = fresh->next_task(), second = fresh->next_task();
  ASSERT_TRUE(first && second);
  ASSERT_EQ(second->work.batch(), 1u);
  const Sampler& sampler = make(10000, 3, 1, 2, true);  // the stream's sampler, made again
  ASSERT_EQ(second->work.copies_size(), second->work.indices_size());
  std::set<uint32_t> seen;
  for (int i = 0; i < second->work.indices_size(); ++i) {
    EXPECT_EQ(second->work.copies(i), sampler.copy_at(8 + second->work.begin() + i));
    seen.insert(second->work.copies(i));
  }
  EXPECT_EQ(seen, (std::set<uint32_t>{0, 1, 2})) << "8 consecutive positions of rank 1 hold every copy number";
  auto resumed = make_stream(1, 3)->next_task();
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->work.batch(), 1u);
  EXPECT_EQ(std::vector<int64_t>(resumed->work.indices().begin(), resumed->work.indices().end()),
            std::vector<int64_t>(second->work.indices().begin(), second->work.indices().end()));
  EXPECT_EQ(std::vector<uint32_t>(resumed->work.copies().begin(), resumed->work.copies().end()),
            std::vector<uint32_t>(second->work.copies().begin(), second->work.copies().end()));
  auto off = make_stream(0, 1)->next_task();
  ASSERT_TRUE(off);
  EXPECT_EQ(off->work.copies_size(), 0) << "without repeated_aug the tasks are as before";
}

TEST(RepeatedAugShareTest, ASubscriberAskingForOtherRepeatsIsRefusedNamingIt) {
  StreamSettings config;
  config.limits.max_shm_bytes = 1ull << 30;
  DatasetRegistry datasets = testing::fmnist_registry();
  testing::FakeWorkers workers{1};
  StreamManager sut(config, datasets, workers, std::move(SegmentInstance::claim()).value());
  std::map<uint64_t, testing::RecordingSink> sinks;
  auto open = [&](uint64_t c, uint32_t repeats, uint64_t selected) {
    wire::OpenStream r = testing::fmnist_u8_request(100, 4);
    r.set_share("deit");
    r.mutable_repeated_aug()->set_repeats(repeats);
    r.mutable_repeated_aug()->set_selected_samples(selected);
    return sut.open(r, Peer{c, static_cast<int32_t>(100 + c), 1000, false}, &sinks[c]);
  };
  ASSERT_TRUE(open(1, 3, 0).ok());
  EXPECT_TRUE(open(2, 3, 0).ok()) << "the same repeats join";
  auto other = open(3, 1, 0);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message().find("share 'deit' reads repeated_aug 3; this stream asks for repeated_aug 1"),
            std::string::npos) << other.error().message();
  auto cut = open(4, 3, 2500);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message().find("repeated_aug.selected_samples 0"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon
