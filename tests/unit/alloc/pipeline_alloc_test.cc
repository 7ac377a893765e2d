// A worker's pipeline allocates nothing per sample once it has seen its largest sample (issue 41, item 2; op.h's
// no-growth rule): the same batches run again through the same Pipeline object make no C++ allocation at all.
// fmnist, fmnist_u8 and lm allocate nothing from their first sample; the image pipelines only while their buffers
// grow to the largest sample (decode windows, resample scratch), so they are measured on a pass over samples already
// seen. Counted: operator new on the running thread (counting_new.h); a C decoder's own mallocs are not C++ ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "counting_new.h"
#include "data/dataset.h"
#include "transforms/presets/pipeline.h"

#include "../daemon/data/token_test_support.h"

namespace batchd::daemon {
namespace {

using alloc_test::CountAllocations;

// operator new calls of each of `passes` passes over the same `batches` batches of `batch` samples (the same seed and
// epoch each pass), the slot made before counting starts.
std::vector<uint64_t> allocations_per_pass(Pipeline& pipeline, uint64_t dataset_size, int batch, int batches,
                                           int passes) {
  std::vector<uint64_t> offsets;
  uint64_t bytes = 0;
  for (const auto& t : pipeline.tensors()) {
    offsets.push_back(bytes);
    bytes += (t.sample_bytes() * batch + 63) / 64 * 64;
  }
  std::vector<char> slot(bytes);
  std::vector<std::vector<int64_t>> lists(batches);
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < batch; ++i) lists[b].push_back(static_cast<int64_t>((b * batch + i) % dataset_size));
  }
  std::vector<uint64_t> counts;
  for (int pass = 0; pass < passes; ++pass) {
    CountAllocations counter;
    for (int b = 0; b < batches; ++b) {
      const BatchContext context{.seed = 7, .epoch = 1, .batch = static_cast<uint64_t>(b)};
      const Status st = pipeline.run(lists[b], slot.data(), offsets, context);
      EXPECT_TRUE(st.ok()) << st.error().message();
      (void)pipeline.take_stage_times();
    }
    counts.push_back(counter.count());
  }
  return counts;
}

std::shared_ptr<const Dataset> fashion_mnist() {
  DatasetConfig c;
  c.name = "fmnist";
  c.format = "idx";
  c.images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  c.labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  auto ds = open_dataset(c, OpenContext{});
  EXPECT_TRUE(ds.ok()) << ds.error().message();
  return ds.ok() ? *ds : nullptr;
}

TEST(PipelineAllocTest, FashionMnistPipelinesAllocateNothingFromTheFirstSample) {
  auto ds = fashion_mnist();
  ASSERT_NE(ds, nullptr);
  for (const char* name : {"fmnist", "fmnist_u8"}) {
    auto pipeline = make_pipeline(name, ds);
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().message();
    EXPECT_EQ(allocations_per_pass(**pipeline, ds->size(), 256, 8, 2), (std::vector<uint64_t>{0, 0})) << name;
  }
}

class LmAllocTest : public token_test::ScratchTest {};

TEST_F(LmAllocTest, LmAllocatesNothingFromTheFirstSample) {
  const std::string path = write_tokens<uint16_t>("train.bin", 1 << 16, [](uint64_t k) { return k % 50257; });
  auto ds = open_dataset(token_test::tokens_config(path, "uint16", 128), OpenContext{});
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  auto pipeline = make_pipeline("lm", *ds);
  ASSERT_TRUE(pipeline.ok()) << pipeline.error().message();
  EXPECT_EQ(allocations_per_pass(**pipeline, (*ds)->size(), 32, 8, 2), (std::vector<uint64_t>{0, 0}));
}

// The vision presets (op lists run by the spec pipeline) over the generated image folder (real photographs, JPEG
// and PNG) and the same photographs as WebDataset shards: after two passes (an image and its spare buffer swap roles
// from op to op, so each may first grow in either role), a third pass over the same samples allocates nothing.
void expect_vision_pipelines_settle(const DatasetConfig& config) {
  auto ds = open_dataset(config, OpenContext{});
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  for (const char* name : {"val224_u8", "val224", "train224_u8", "train224"}) {
    auto pipeline = make_pipeline(name, *ds);
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().message();
    const auto counts = allocations_per_pass(**pipeline, (*ds)->size(), 8, 8, 3);
    EXPECT_GT(counts[0], 0u) << name << ": the first pass grows the buffers (else this test measures nothing)";
    EXPECT_EQ(counts[2], 0u) << config.format << " " << name << ": " << counts[0] << ", " << counts[1] << ", "
                             << counts[2] << " allocations per pass";
  }
}

TEST(PipelineAllocTest, ImageFolderPipelinesAllocateNothingOnceTheirLargestSampleWasSeen) {
  DatasetConfig c;
  c.name = "photos";
  c.format = "imagefolder";
  c.root = BATCHD_TESTDATA_DIR "/imagefolder";
  expect_vision_pipelines_settle(c);
}

TEST(PipelineAllocTest, WebDatasetPipelinesAllocateNothingOnceTheirLargestSampleWasSeen) {
  DatasetConfig c;
  c.name = "shards";
  c.format = "webdataset";
  for (int i = 0; i < 4; ++i) {
    c.shards.push_back(BATCHD_TESTDATA_DIR "/shards/shard-00000" + std::to_string(i) + ".tar");
  }
  expect_vision_pipelines_settle(c);
}

}  // namespace
}  // namespace batchd::daemon
