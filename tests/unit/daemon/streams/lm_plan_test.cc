// plan() of lm streams (streams/pipeline_plan.h, ops/token_window.h): a stream's seq_len and sampling, resolved
// into pipeline_options.lm for the workers, sizing the reply's tensors, dataset_size and epochs; their refusals
// (bounds, other pipelines, a subset with random windows, both spellings disagreeing); endless streams (num_epochs 0;
// refused when shared); and the presets as specs (fmnist, lm), a client's token_window spec.
#include <gtest/gtest.h>

#include "batchd/wire/convert.h"
#include "data/dataset_config.h"  // kMaxSeqLen
#include "streams/plan.h"
#include "transforms/ops/op.h"
#include "../data/token_test_support.h"

namespace batchd::daemon {
namespace {

class LmPlanTest : public token_test::ScratchTest {
 protected:
  void SetUp() override {
    ScratchTest::SetUp();
    // N = 10001 tokens, the dataset's T = 100: 100 tiled windows.
    const std::string path = write_tokens<uint16_t>("train.bin", 10001, [](uint64_t k) { return k & 0xffff; });
    DatasetConfig fmnist;
    fmnist.name = "fmnist";
    fmnist.format = "idx";
    fmnist.images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    fmnist.labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
    datasets_ = DatasetRegistry::open_all({token_test::tokens_config(path, "uint16", 100), fmnist});
  }

  static wire::OpenStream request(uint32_t seq_len = 0, wire::LmSampling sampling = wire::TILED_WINDOWS) {
    wire::OpenStream r;
    r.set_dataset("lm");
    r.set_pipeline("lm");
    r.set_batch_size(8);
    r.set_seq_len(seq_len);
    r.set_sampling(sampling);
    return r;
  }
  Result<StreamPlan> plan_of(const wire::OpenStream& r) const { return plan(r, context_, datasets_); }
  void expect_error(const wire::OpenStream& r, const std::string& words) const {
    auto p = plan_of(r);
    ASSERT_FALSE(p.ok()) << "plan accepted a request it should refuse";
    EXPECT_EQ(p.error().code(), ErrorCode::kInvalidArgument) << p.error().message();
    EXPECT_NE(p.error().message().find(words), std::string::npos) << "'" << words << "' not in: "
                                                                   << p.error().message();
  }

  static wire::OpenStream named(const std::string& dataset, const std::string& pipeline) {
    wire::OpenStream r;
    r.set_dataset(dataset);
    r.set_pipeline(pipeline);
    r.set_batch_size(8);
    return r;
  }
  std::string refusal(const wire::OpenStream& r) const {
    auto p = plan_of(r);
    EXPECT_FALSE(p.ok()) << "plan accepted a request it should refuse";
    return p.ok() ? std::string() : p.error().message();
  }

  DatasetRegistry datasets_;
  PlanContext context_;
};

TEST_F(LmPlanTest, TheDatasetsSeqLenIsTheDefaultAndResolvedForTheWorkers) {
  auto p = plan_of(request());
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.dataset_size(), 100u);
  EXPECT_EQ(p->opened.tensors(0).sample_shape(0), 100);
  ASSERT_TRUE(p->attach.pipeline_options().has_lm());
  EXPECT_EQ(p->attach.pipeline_options().lm().seq_len(), 100u) << "resolved: never 0 in WorkerAttach";
  EXPECT_EQ(p->attach.pipeline_options().lm().sampling(), wire::TILED_WINDOWS);
  EXPECT_EQ(p->opened.num_epochs(), 1u);
}

TEST_F(LmPlanTest, AStreamsSeqLenSizesItsTensorsSamplesAndEpochs) {
  for (uint32_t t : {1u, 7u, 100u, 256u, 10000u}) {
    SCOPED_TRACE("T = " + std::to_string(t));
    auto tiled = plan_of(request(t));
    ASSERT_TRUE(tiled.ok()) << tiled.error().message();
    const auto& o = tiled->opened;
    ASSERT_EQ(o.tensors_size(), 3);
    for (int k : {0, 1}) {
      EXPECT_EQ(o.tensors(k).sample_shape(0), static_cast<int64_t>(t));
      EXPECT_EQ(o.tensors(k).sample_bytes(), 8u * t);
    }
    EXPECT_EQ(o.dataset_size(), 10000u / t);
    EXPECT_EQ(o.batches_per_epoch(), (10000u / t + 7) / 8);
    EXPECT_EQ(tiled->attach.pipeline_options().lm().seq_len(), t);
    auto random = plan_of(request(t, wire::RANDOM_WINDOWS));
    ASSERT_TRUE(random.ok()) << random.error().message();
    EXPECT_EQ(random->opened.dataset_size(), 10001u - t) << "every offset 0 .. N - T - 1";
    EXPECT_EQ(random->opened.batches_per_epoch(), std::max(1u, 10000u / t / 8));
    EXPECT_EQ(random->opened.samples_per_epoch(), random->opened.batches_per_epoch() * 8);
    EXPECT_TRUE(random->sampler.random_windows());
    EXPECT_EQ(random->attach.pipeline_options().lm().sampling(), wire::RANDOM_WINDOWS);
  }
  auto ranks = request(10, wire::RANDOM_WINDOWS);
  ranks.set_world_size(4);
  ranks.set_rank(3);
  EXPECT_EQ(plan_of(ranks)->opened.batches_per_epoch(), 1000u / 32) << "one pass of the file over the ranks";
}

TEST_F(LmPlanTest, ASeqLenOutOfRangeIsRefusedNamingTheBoundAndTheFix) {
  expect_error(request(10001), "seq_len 10001 needs windows of 10002 tokens, and 'lm' holds 10001: lower seq_len "
                               "to at most 10000");
  expect_error(request(kMaxSeqLen + 1, wire::RANDOM_WINDOWS), "seq_len 16777217 is over 16777216");
  // Within the file, but a segment of 4 slots of 8 rows of 2 x 10000 int64 over a small limit.
  context_.limits.max_segment_bytes = 1 << 20;
  auto p = plan_of(request(10000));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(p.error().message().find("limits.max_segment_bytes"), std::string::npos) << p.error().message();
  EXPECT_NE(p.error().message().find("or seq_len"), std::string::npos) << p.error().message();
}

TEST_F(LmPlanTest, SeqLenAndSamplingBelongToPipelineLmAndRandomWindowsToTheWholeFile) {
  auto fmnist = request(16);
  fmnist.set_dataset("fmnist");
  fmnist.set_pipeline("fmnist");
  expect_error(fmnist, "seq_len and sampling are options of pipeline 'lm' (token windows); pipeline 'fmnist' takes "
                       "none");
  auto sampling_only = request(0, wire::RANDOM_WINDOWS);
  sampling_only.set_dataset("fmnist");
  sampling_only.set_pipeline("fmnist_u8");
  expect_error(sampling_only, "pipeline 'fmnist_u8' takes none");
  auto images = request(0, wire::RANDOM_WINDOWS);
  images.set_dataset("fmnist");
  expect_error(images, "pipeline 'lm' needs a token dataset (format = \"tokens\"); 'fmnist' is idx");
  auto ops = request(16);
  ops.set_pipeline("");
  ops.mutable_spec()->add_ops()->set_name("to_tensor");
  expect_error(ops, "pipeline 'custom' is a list of image ops and takes none");
  auto subset = request(16, wire::RANDOM_WINDOWS);
  subset.mutable_subset()->add_run_starts(0);
  subset.mutable_subset()->add_run_lengths(10);
  expect_error(subset, "sampling RANDOM_WINDOWS draws windows at any token offset of 'lm'");
  subset.set_sampling(wire::TILED_WINDOWS);
  EXPECT_TRUE(plan_of(subset).ok()) << "a subset of tiled windows is a Subset as for any dataset";
  auto repeated = request(16, wire::RANDOM_WINDOWS);
  repeated.mutable_repeated_aug()->set_repeats(3);
  expect_error(repeated, "sampling RANDOM_WINDOWS draws every batch anew: repeated_aug");
  repeated.set_sampling(wire::TILED_WINDOWS);
  EXPECT_TRUE(plan_of(repeated).ok()) << "tiled windows repeat as any dataset's samples";
  auto both = request(16);
  both.mutable_pipeline_options()->mutable_lm()->set_seq_len(32);
  expect_error(both, "seq_len/sampling (seq_len: 16) and pipeline_options.lm (seq_len: 32) disagree");
  both.mutable_pipeline_options()->mutable_lm()->set_seq_len(16);
  EXPECT_TRUE(plan_of(both).ok()) << "the same options both ways";
}

TEST_F(LmPlanTest, AnEndlessStreamHasNoEpochCountAndMustBePrivate) {
  auto r = request(32, wire::RANDOM_WINDOWS);
  r.set_endless(true);
  r.set_num_epochs(5);  // ignored
  auto p = plan_of(r);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.num_epochs(), 0u);
  EXPECT_EQ(wire::total_batches(p->opened), wire::kEndlessBatches);
  auto fmnist = request();
  fmnist.set_dataset("fmnist");
  fmnist.set_pipeline("fmnist_u8");
  fmnist.set_endless(true);
  EXPECT_EQ(plan_of(fmnist)->opened.num_epochs(), 0u) << "any dataset may be read endlessly";
  r.set_share("lm-share");
  expect_error(r, "share 'lm-share': each subscriber reads num_epochs epochs of a shared production, so an endless "
                  "stream must be private");
}

// plan_pipeline (streams/pipeline_plan.h): the presets are specs in the reply, fmnist and lm sized by their dataset
// whatever the limits on what a client may ask for; a client's token_window spec; refusals naming what was sent.
TEST_F(LmPlanTest, ThePresetsAreSpecsInTheReplyAndTheirDatasetSizesThemWhateverTheLimits) {
  context_.limits.max_ops = 1;            // a client's spec of 2 ops is refused ...
  context_.limits.max_output_side = 16;   // ... and so is any image over 16 pixels a side
  auto fmnist = plan_of(named("fmnist", "fmnist"));
  ASSERT_TRUE(fmnist.ok()) << fmnist.error().message();
  ASSERT_EQ(fmnist->opened.spec().ops_size(), 3);
  EXPECT_EQ(fmnist->opened.spec().ops(0).name(), "idx_image");
  EXPECT_EQ(fmnist->attach.spec().SerializeAsString(), fmnist->opened.spec().SerializeAsString());
  EXPECT_EQ(fmnist->opened.tensors(0).sample_shape_size(), 3);
  EXPECT_EQ(fmnist->opened.tensors(0).sample_shape(0), 1);
  EXPECT_EQ(fmnist->opened.tensors(0).sample_shape(2), 28);
  auto lm = plan_of(named("lm", "lm"));
  ASSERT_TRUE(lm.ok()) << lm.error().message();
  ASSERT_EQ(lm->opened.spec().ops_size(), 1);
  EXPECT_EQ(lm->opened.spec().ops(0).name(), "token_window");
  EXPECT_EQ(ops::number(lm->opened.spec().ops(0), "seq_len"), 100) << "the dataset's T, resolved";
  auto own = named("fmnist", "");
  own.mutable_spec()->add_ops()->set_name("idx_image");
  own.mutable_spec()->add_ops()->set_name("pil_to_tensor");
  EXPECT_NE(refusal(own).find("limits.max_ops"), std::string::npos) << "a client's spec keeps the limits";
}

TEST_F(LmPlanTest, AClientsTokenWindowSpecIsSizedAsTheLmPresetAndCarriesItsOwnSeqLen) {
  auto own = named("lm", "");
  wire::Op* window = own.mutable_spec()->add_ops();
  window->set_name("token_window");
  auto* seq_len = window->add_params();
  seq_len->set_key("seq_len");
  seq_len->mutable_value()->set_number(50);
  auto p = plan_of(own);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.dataset_size(), 10000u / 50) << "tiled windows of T = 50";
  EXPECT_EQ(p->opened.tensors(0).name(), "input_ids");
  EXPECT_EQ(p->opened.tensors(0).sample_shape(0), 50);
  own.set_seq_len(64);
  EXPECT_EQ(refusal(own), "seq_len and sampling are options of pipeline 'lm'; pipeline 'custom' is a spec whose "
                           "token_window carries its own seq_len and sampling: set them there and leave these unset");
  auto too_long = named("lm", "lm");
  too_long.set_seq_len(20000);
  EXPECT_EQ(refusal(too_long).rfind("dataset 'lm': seq_len 20000 needs windows of 20001 tokens", 0), 0u)
      << "the preset's seq_len errors name the dataset, not an op the user never sent";
}

}  // namespace
}  // namespace batchd::daemon
