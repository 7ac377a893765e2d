// plan(): every validation error of OpenStream, and what a valid plan holds — without a daemon or /dev/shm.
#include "streams/plan.h"

#include <gtest/gtest.h>

#include "fake_workers.h"

namespace batchd::daemon {
namespace {

class PlanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { datasets_ = new DatasetRegistry(testing::fmnist_registry()); }
  static void TearDownTestSuite() { delete datasets_; }

  wire::OpenStream request() const {
    wire::OpenStream r;
    r.set_dataset("fmnist");
    r.set_pipeline("fmnist");
    r.set_batch_size(100);
    return r;
  }
  // The error plan() gives `r` (fails the test if it gives none).
  Error error_of(const wire::OpenStream& r) const {
    auto p = plan(r, context_, *datasets_);
    EXPECT_FALSE(p.ok()) << "plan accepted a request it should refuse";
    return p.ok() ? Error(ErrorCode::kInternal, "") : p.error();
  }
  void expect_error(const wire::OpenStream& r, ErrorCode code, const std::string& words) const {
    const Error e = error_of(r);
    EXPECT_EQ(e.code(), code) << e.message();
    EXPECT_NE(e.message().find(words), std::string::npos) << "'" << words << "' not in: " << e.message();
  }

  static DatasetRegistry* datasets_;
  PlanContext context_;
};
DatasetRegistry* PlanTest::datasets_ = nullptr;

TEST_F(PlanTest, ValidRequestIsSizedAndDescribedOnceForClientAndWorkers) {
  auto r = request();
  r.set_epoch(3);
  r.set_num_epochs(2);
  r.set_start_batch(5);
  r.set_seed(42);
  auto p = plan(r, context_, *datasets_);
  ASSERT_TRUE(p.ok()) << p.error().message();
  const auto& o = p->opened;
  EXPECT_EQ(o.stream_id(), 0u) << "the segment pool stamps the id";
  EXPECT_EQ(o.strategy(), wire::FILE_DESCRIPTOR);
  EXPECT_EQ(o.slot_count(), context_.limits.default_depth);
  EXPECT_EQ(o.dataset_size(), 10000u);
  EXPECT_EQ(o.batches_per_epoch(), 100u);
  EXPECT_EQ(o.first_epoch(), 3u);
  EXPECT_EQ(o.num_epochs(), 2u);
  EXPECT_EQ(o.start_batch(), 5u);
  ASSERT_EQ(o.tensors_size(), 3);
  EXPECT_EQ(o.tensors(0).name(), "image");
  EXPECT_EQ(o.tensors(2).name(), "index");
  EXPECT_EQ(o.tensors(2).sample_bytes(), 8u);
  EXPECT_GE(o.segment_bytes(), o.slot_offset() + o.slot_count() * o.slot_stride());
  const auto& a = p->attach;
  EXPECT_EQ(a.dataset(), "fmnist");
  EXPECT_EQ(a.dataset_key(), datasets_->key("fmnist"));
  EXPECT_EQ(a.seed(), 42u);
  EXPECT_EQ(a.segment_bytes(), o.segment_bytes());
  EXPECT_EQ(a.slot_stride(), o.slot_stride());
  EXPECT_EQ(a.tensors_size(), o.tensors_size());
  EXPECT_FALSE(a.pipeline_options().has_vision()) << "fmnist takes no vision options";
}

TEST_F(PlanTest, DropLastBatchSetApartFromDropLastKeepsTheShortBatch) {
  auto r = request();  // 10,000 samples, batches of 100, rank 0 of 3: 3,333 samples with drop_last
  r.set_world_size(3);
  r.set_drop_last(true);
  auto both = plan(r, context_, *datasets_);  // drop_last_batch unset: drop_last drops the short batch too
  ASSERT_TRUE(both.ok()) << both.error().message();
  EXPECT_EQ(both->opened.samples_per_epoch(), 3333u);
  EXPECT_EQ(both->opened.batches_per_epoch(), 33u);
  r.set_drop_last_batch(false);  // a DataLoader(drop_last=False) over DistributedSampler(drop_last=True)
  auto kept = plan(r, context_, *datasets_);
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  EXPECT_EQ(kept->opened.samples_per_epoch(), 3333u);
  EXPECT_EQ(kept->opened.batches_per_epoch(), 34u);
}

TEST_F(PlanTest, DefaultStrategyDepthAndEpochsComeFromTheContext) {
  context_.default_strategy = wire::FILE_SYSTEM;
  context_.limits.default_depth = 7;
  auto p = plan(request(), context_, *datasets_);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->opened.strategy(), wire::FILE_SYSTEM);
  EXPECT_EQ(p->opened.slot_count(), 7u);
  EXPECT_EQ(p->opened.num_epochs(), 1u);
}

TEST_F(PlanTest, LegacyVisionFieldsAreMappedIntoPipelineOptions) {
  auto r = request();
  r.set_pipeline("val224");
  r.set_crop_size(100);
  r.set_resize_size(120);
  r.set_exact_decode(true);
  // The idx dataset does not fit val224, but the options are resolved (and checked) first.
  expect_error(r, ErrorCode::kInvalidArgument, "need an image dataset");
  r.set_resize_size(90);
  expect_error(r, ErrorCode::kInvalidArgument, "resize_size 90 must be at least crop_size (100)");
  r.mutable_pipeline_options()->mutable_vision()->set_crop_size(100);
  expect_error(r, ErrorCode::kInvalidArgument, "disagree");
  r.mutable_pipeline_options()->mutable_vision()->set_resize_size(90);
  r.mutable_pipeline_options()->mutable_vision()->set_exact_decode(true);
  // Both, agreeing (as clients from 0.2 send them): accepted, and checked as vision options.
  expect_error(r, ErrorCode::kInvalidArgument, "resize_size 90 must be at least crop_size (100)");
}

TEST_F(PlanTest, LegacyDefaultsOfOldClientsMeanUnsetForEveryPipeline) {
  auto r = request();
  r.set_crop_size(224);
  r.set_resize_size(256);
  EXPECT_TRUE(plan(r, context_, *datasets_).ok()) << "old clients sent 224/256 with every stream";
  r.set_crop_size(128);
  expect_error(r, ErrorCode::kInvalidArgument, "pipeline 'fmnist' takes no vision options");
}

TEST_F(PlanTest, EveryValidationErrorNamesTheCauseAndItsLimit) {
  auto r = request();
  context_.draining = true;
  expect_error(r, ErrorCode::kUnavailable, "draining");
  context_.draining = false;
  context_.connection_streams = context_.limits.max_streams_per_connection;
  expect_error(r, ErrorCode::kResourceExhausted, "limits.max_streams_per_connection");
  context_.connection_streams = 0;

  r = request(), r.set_dataset("nope");
  expect_error(r, ErrorCode::kNotFound, "nope");
  r = request(), r.set_pipeline("nope");
  expect_error(r, ErrorCode::kNotFound, "unknown pipeline 'nope'");
  r = request(), r.mutable_pipeline_options()->mutable_vision()->set_crop_size(64);
  expect_error(r, ErrorCode::kInvalidArgument, "takes no vision options");
  r = request(), r.set_pipeline("train224"), r.mutable_pipeline_options()->mutable_vision()->set_crop_size(5000);
  expect_error(r, ErrorCode::kInvalidArgument, "crop_size 5000 is out of range [8, 4096]");
  r = request(), r.set_pipeline("train224");
  expect_error(r, ErrorCode::kInvalidArgument, "need an image dataset");
  r = request(), r.set_batch_size(0);
  expect_error(r, ErrorCode::kInvalidArgument, "batch_size 0 is out of range");
  r = request(), r.set_batch_size(context_.limits.max_batch_size + 1);
  expect_error(r, ErrorCode::kInvalidArgument, "limits.max_batch_size");
  r = request(), r.set_depth(context_.limits.max_depth + 1);
  expect_error(r, ErrorCode::kResourceExhausted, "limits.max_depth");
  r = request(), r.set_world_size(kMaxWorldSize + 1);
  expect_error(r, ErrorCode::kInvalidArgument, "world_size");
  r = request(), r.set_world_size(2), r.set_rank(2);
  expect_error(r, ErrorCode::kInvalidArgument, "rank");
  r = request(), r.set_start_batch(100);
  expect_error(r, ErrorCode::kInvalidArgument, "start_batch 100 is past the end of the epoch (100 batches)");
  r = request(), r.set_epoch((uint64_t{1} << 62) + 1);
  expect_error(r, ErrorCode::kInvalidArgument, "epoch is out of range");
  context_.limits.max_frame_bytes = 1000;
  r = request();
  expect_error(r, ErrorCode::kResourceExhausted, "limits.max_frame_bytes");
  context_.limits = Limits{};
  context_.limits.max_segment_bytes = 1 << 20;
  expect_error(r, ErrorCode::kResourceExhausted, "limits.max_segment_bytes");
  context_.limits = Limits{};
  r = request(), r.set_strategy(static_cast<wire::SharingStrategy>(7));
  expect_error(r, ErrorCode::kInvalidArgument, "strategy 7 is not a sharing strategy");
  r = request(), r.set_on_error(static_cast<wire::OnError>(9));
  expect_error(r, ErrorCode::kInvalidArgument, "on_error 9 is not a policy");
}

TEST_F(PlanTest, DryRunAndWritableAreCarriedToTheOwner) {
  auto r = request();
  r.set_dry_run(true);
  r.set_writable(true);
  r.set_on_error(wire::ON_ERROR_SKIP);
  auto p = plan(r, context_, *datasets_);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->dry_run);
  EXPECT_TRUE(p->writable);
  EXPECT_EQ(p->on_error, wire::ON_ERROR_SKIP);
}

}  // namespace
}  // namespace batchd::daemon

#include "transforms/presets/presets.h"

namespace batchd::daemon {
namespace {

TEST(PipelineOptionsTest, ResolvedOnceWithEveryDefaultAndIdempotent) {
  auto val = resolve_pipeline_options("val", {});
  ASSERT_TRUE(val.ok());
  EXPECT_EQ(val->vision().crop_size(), 224u);
  EXPECT_EQ(val->vision().resize_size(), 256u);
  EXPECT_FALSE(val->vision().exact_decode());
  auto again = resolve_pipeline_options("val224", *val);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->SerializeAsString(), val->SerializeAsString());
  auto train = resolve_pipeline_options("train224_u8", {});
  ASSERT_TRUE(train.ok());
  EXPECT_EQ(train->vision().crop_size(), 224u);
  EXPECT_EQ(train->vision().resize_size(), 0u) << "RandomResizedCrop uses no resize_size: not part of the stream";
  auto fmnist = resolve_pipeline_options("fmnist_u8", {});
  ASSERT_TRUE(fmnist.ok());
  EXPECT_FALSE(fmnist->has_vision());
}

TEST_F(PlanTest, ASharedStreamHasMaxLagMoreSlotsAndItsDepthAsWindow) {
  auto r = request();
  r.set_depth(3);
  r.set_share("sweep-1");
  context_.share_extra_slots = 5;
  auto p = plan(r, context_, *datasets_);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.slot_count(), 8u);
  EXPECT_EQ(p->opened.window(), 3u);
  EXPECT_EQ(p->opened.share(), "sweep-1");
  EXPECT_EQ(p->attach.slot_count(), 8u);
  r.set_share("");
  auto private_plan = plan(r, context_, *datasets_);
  ASSERT_TRUE(private_plan.ok());
  EXPECT_EQ(private_plan->opened.slot_count(), 3u);
  EXPECT_EQ(private_plan->opened.window(), 0u);
}

TEST_F(PlanTest, ABadShareNameOrAWritableShareIsRefused) {
  auto r = request();
  r.set_share("has space");
  expect_error(r, ErrorCode::kInvalidArgument, "share name 'has space'");
  r.set_share(std::string(65, 'a'));
  expect_error(r, ErrorCode::kInvalidArgument, "1 to 64 characters");
  r.set_share("ok");
  r.set_writable(true);
  expect_error(r, ErrorCode::kInvalidArgument, "writable = false");
}

}  // namespace
}  // namespace batchd::daemon
