// WebDataset shards through a real daemon: val224 bit-identical to PIL + torchvision on the same tar members,
// exactly once per epoch across ranks with each sample's label the one in its .cls member, and resuming mid-epoch.
#include <cmath>
#include <map>
#include <set>

#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

class WebDatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    suite_ = std::make_unique<SuiteDaemon>("wds", wds_table("wds", toml_string(kShards)), std::vector<std::string>{},
                                           std::vector<std::string>{"wds"});
  }
  static void TearDownTestSuite() { suite_.reset(); }
  Client client() { return suite_->client(); }
  static StreamOptions options(const std::string& pipeline, uint32_t batch) {
    StreamOptions o;
    o.dataset = "wds";
    o.pipeline = pipeline;
    o.batch_size = batch;
    return o;
  }
  static inline std::unique_ptr<SuiteDaemon> suite_;
};

TEST_F(WebDatasetTest, Val224WithExactDecodeIsBitIdenticalToTorchvisionOnTheSameMembers) {
  const int n = 20;  // the first shard and 4 samples of the second
  Reference ref;
  std::string why;
  if (!tar_reference(kData + "/shards/shard-*.tar", n, &ref, &why)) FAIL() << "the torchvision reference failed: " << why;
  ASSERT_EQ(ref.labels.size(), 60u);
  auto o = options("val224", n);
  o.shuffle = false;
  o.vision.exact_decode = true;
  auto stream = client().open_stream(o);
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  EXPECT_EQ(stream->info().dataset_size, 60u);
  auto batch = stream->next();
  ASSERT_TRUE(batch.ok() && *batch) << (batch.ok() ? "end" : batch.error().message());
  const Tensor* image = (*batch)->find("image");
  ASSERT_EQ(image->shape, (std::vector<int64_t>{n, 3, 224, 224}));
  const Tensor* label = (*batch)->find("label");
  for (int i = 0; i < n; ++i) EXPECT_EQ(label->data_as<int64_t>()[i], ref.labels[i]) << ref.names[i];
  size_t differ = 0;
  double max_diff = 0;
  for (size_t i = 0; i < ref.pixels.size(); ++i) {
    const float got = image->data_as<float>()[i];
    if (std::memcmp(&got, &ref.pixels[i], sizeof(float)) != 0) ++differ;
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(got - ref.pixels[i])));
  }
  EXPECT_EQ(differ, 0u) << "of " << ref.pixels.size() << " values differ (max |diff| " << max_diff << ")";
}

TEST_F(WebDatasetTest, EveryRankOfFourReadsItsShareExactlyOncePerEpochWithTheLabelsOfTheClsMembers) {
  Reference ref;
  std::string why;
  if (!tar_reference(kData + "/shards/shard-*.tar", 0, &ref, &why)) FAIL() << "the torchvision reference failed: " << why;
  ASSERT_EQ(ref.labels.size(), 60u);
  std::map<uint64_t, std::multiset<int64_t>> by_epoch;  // every rank's indices together
  for (uint32_t rank = 0; rank < 4; ++rank) {
    auto o = options("train224_u8", 4);
    o.vision.crop_size = 32;
    o.seed = 11;
    o.num_epochs = 2;
    o.rank = rank;
    o.world_size = 4;
    auto stream = client().open_stream(o);
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    EXPECT_EQ(stream->info().samples_per_epoch, 15u);
    for (;;) {
      auto batch = stream->next();
      ASSERT_TRUE(batch.ok()) << batch.error().message();
      if (!*batch) break;
      const Tensor* index = (*batch)->find("index");
      const Tensor* label = (*batch)->find("label");
      for (int64_t j = 0; j < index->numel(); ++j) {
        const int64_t i = index->data_as<int64_t>()[j];
        by_epoch[(*batch)->epoch()].insert(i);
        EXPECT_EQ(label->data_as<int64_t>()[j], ref.labels.at(static_cast<size_t>(i))) << ref.names.at(i);
      }
    }
  }
  ASSERT_EQ(by_epoch.size(), 2u);
  for (const auto& [epoch, seen] : by_epoch) {
    EXPECT_EQ(seen.size(), 60u) << "epoch " << epoch << ": the ranks' shares are disjoint";
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 60u) << "epoch " << epoch << ": and cover all";
  }
}

TEST_F(WebDatasetTest, AResumedStreamYieldsExactlyTheRemainingBatches) {
  auto read = [&](uint64_t start_batch) {
    auto o = options("train224_u8", 7);
    o.vision.crop_size = 48;
    o.seed = 3;
    o.epoch = 2;
    o.start_batch = start_batch;
    auto stream = client().open_stream(o);
    EXPECT_TRUE(stream.ok()) << stream.error().message();
    std::vector<std::pair<std::vector<int64_t>, std::vector<uint8_t>>> batches;
    for (;;) {
      auto batch = stream->next();
      EXPECT_TRUE(batch.ok()) << batch.error().message();
      if (!batch.ok() || !*batch) break;
      const Tensor* index = (*batch)->find("index");
      const Tensor* image = (*batch)->find("image");
      batches.emplace_back(std::vector<int64_t>(index->data_as<int64_t>(), index->data_as<int64_t>() + index->numel()),
                           std::vector<uint8_t>(image->data_as<uint8_t>(), image->data_as<uint8_t>() + image->nbytes));
    }
    return batches;
  };
  const auto whole = read(0);
  ASSERT_EQ(whole.size(), 9u) << "60 samples in batches of 7";
  const auto resumed = read(4);
  ASSERT_EQ(resumed.size(), whole.size() - 4);
  for (size_t b = 0; b < resumed.size(); ++b) {
    EXPECT_EQ(resumed[b].first, whole[b + 4].first) << "batch " << b + 4;
    EXPECT_TRUE(resumed[b].second == whole[b + 4].second) << "batch " << b + 4 << " has other pixels";
  }
}

}  // namespace
}  // namespace batchd::testing
