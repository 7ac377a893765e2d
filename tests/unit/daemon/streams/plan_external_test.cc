// plan() of OpenStream.external (a trainer's own Dataset, external_plan.h): the fields become the tensors, the
// sampler is sized as for any dataset, and each refusal names the field or key to change.
#include <gtest/gtest.h>

#include <set>

#include "fake_workers.h"
#include "streams/external_plan.h"
#include "streams/plan.h"

namespace batchd::daemon {
namespace {

class PlanExternalTest : public ::testing::Test {
 protected:
  // len 1000; fields image float32 [3, 4, 5] (240 bytes a sample) and label int16 [] (2 bytes); 4 workers.
  static wire::OpenStream request() {
    wire::OpenStream r;
    r.set_batch_size(10);
    auto* ext = r.mutable_external();
    ext->set_size(1000);
    ext->set_workers(4);
    ext->set_name("SyntheticDataset");
    auto* image = ext->add_fields();
    image->set_name("image");
    image->set_dtype(wire::FLOAT32);
    for (int64_t d : {3, 4, 5}) image->add_sample_shape(d);
    auto* label = ext->add_fields();
    label->set_name("label");
    label->set_dtype(wire::INT16);
    return r;
  }
  Result<StreamPlan> plan_of(const wire::OpenStream& r) const { return plan(r, context_, datasets_); }
  void expect_error(const wire::OpenStream& r, ErrorCode code, const std::string& words) const {
    auto p = plan_of(r);
    ASSERT_FALSE(p.ok()) << "plan accepted a request it should refuse (expected: " << words << ")";
    EXPECT_EQ(p.error().code(), code) << p.error().message();
    EXPECT_NE(p.error().message().find(words), std::string::npos)
        << "'" << words << "' not in: " << p.error().message();
  }

  DatasetRegistry datasets_ = testing::fmnist_registry();  // the daemon's own datasets: never consulted here
  PlanContext context_;
};

TEST_F(PlanExternalTest, FieldsBecomeTheTensorsThenIndexWithTheirOffsetsAndSampleBytes) {
  auto p = plan_of(request());
  ASSERT_TRUE(p.ok()) << p.error().message();
  const wire::StreamOpened& o = p->opened;
  EXPECT_TRUE(p->external);
  EXPECT_EQ(p->external_workers, 4u);
  EXPECT_EQ(o.dataset(), "python:SyntheticDataset");
  EXPECT_EQ(o.dataset_size(), 1000u);
  EXPECT_EQ(o.classes_size(), 0) << "no daemon dataset: no class names";
  ASSERT_EQ(o.tensors_size(), 3);
  const std::vector<std::string> names{"image", "label", "index"};
  const std::vector<wire::DType> dtypes{wire::FLOAT32, wire::INT16, wire::INT64};
  const std::vector<uint64_t> bytes{3 * 4 * 5 * 4, 2, 8};
  // After the 256-byte slot header, each tensor (10 samples) at the next multiple of 256 (segment_layout.h):
  // image [256, 2656), label [2816, 2836), index at 3072.
  const std::vector<uint64_t> offsets{256, 2816, 3072};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(o.tensors(i).name(), names[i]);
    EXPECT_EQ(o.tensors(i).dtype(), dtypes[i]) << names[i];
    EXPECT_EQ(o.tensors(i).sample_bytes(), bytes[i]) << names[i];
    EXPECT_EQ(o.tensors(i).offset(), offsets[i]) << names[i];
  }
  EXPECT_EQ(std::vector<int64_t>(o.tensors(0).sample_shape().begin(), o.tensors(0).sample_shape().end()),
            (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(o.tensors(1).sample_shape_size(), 0) << "a scalar field";
  EXPECT_EQ(p->attach.tensors_size(), 3) << "the workers get the same layout";
  EXPECT_EQ(p->attach.tensors(1).offset(), offsets[1]);
  EXPECT_EQ(p->attach.dataset_key(), "") << "no daemon dataset behind it";
  EXPECT_EQ(p->attach.pipeline_options().ByteSizeLong(), 0u);
}

TEST_F(PlanExternalTest, ANameThatIsNotANameIsShownAsDataset) {
  auto r = request();
  r.mutable_external()->set_name("my dataset!");
  auto p = plan_of(r);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.dataset(), "python:Dataset");
}

// DistributedSampler's and DataLoader's sizes, as for a daemon dataset of 1000 samples.
TEST_F(PlanExternalTest, TheSamplerIsSizedAsForAnyDataset) {
  auto r = request();
  r.set_batch_size(64);
  r.set_world_size(3);
  r.set_rank(2);
  r.set_drop_last(true);  // floor(1000 / 3) = 333 samples, 5 whole batches
  auto dropped = plan_of(r);
  ASSERT_TRUE(dropped.ok()) << dropped.error().message();
  EXPECT_EQ(dropped->opened.samples_per_epoch(), 333u);
  EXPECT_EQ(dropped->opened.batches_per_epoch(), 5u);
  r.set_drop_last(false);  // ceil(1000 / 3) = 334 samples (padded with the head), 6 batches
  auto kept = plan_of(r);
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  EXPECT_EQ(kept->opened.samples_per_epoch(), 334u);
  EXPECT_EQ(kept->opened.batches_per_epoch(), 6u);
  EXPECT_EQ(kept->sampler.epoch_indices(0)[0], 2) << "rank 2 of 3 starts at position 2 unshuffled";

  auto s = request();
  s.set_shuffle(true);
  s.set_seed(7);
  auto shuffled = plan_of(s);
  ASSERT_TRUE(shuffled.ok()) << shuffled.error().message();
  const std::vector<int64_t> epoch0 = shuffled->sampler.epoch_indices(0);
  EXPECT_EQ(epoch0, Sampler::permutation(1000, 7, 0)) << "the same (seed, epoch) permutation as any dataset";
  EXPECT_EQ(std::set<int64_t>(epoch0.begin(), epoch0.end()).size(), 1000u);
  EXPECT_NE(shuffled->sampler.epoch_indices(1), epoch0) << "a new order each epoch";
}

TEST_F(PlanExternalTest, ADryRunNeedsNoFields) {
  auto r = request();
  r.mutable_external()->clear_fields();
  expect_error(r, ErrorCode::kInvalidArgument, "no fields");
  r.set_dry_run(true);  // len(loader) before the first sample was made
  auto p = plan_of(r);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->opened.batches_per_epoch(), 100u);
  ASSERT_EQ(p->opened.tensors_size(), 1);
  EXPECT_EQ(p->opened.tensors(0).name(), "index");
}

TEST_F(PlanExternalTest, EachDaemonSideFieldBesideExternalIsRefusedByName) {
  struct Case {
    const char* field;
    void (*set)(wire::OpenStream*);
  };
  const Case cases[] = {
      {"OpenStream.dataset", [](wire::OpenStream* r) { r->set_dataset("fmnist"); }},
      {"OpenStream.pipeline", [](wire::OpenStream* r) { r->set_pipeline("fmnist"); }},
      {"OpenStream.spec", [](wire::OpenStream* r) { r->mutable_spec(); }},
      {"OpenStream.folder", [](wire::OpenStream* r) { r->mutable_folder(); }},
      {"OpenStream.subset", [](wire::OpenStream* r) { r->mutable_subset(); }},
      {"OpenStream.share", [](wire::OpenStream* r) { r->set_share("s"); }},
      {"OpenStream.pipeline_options", [](wire::OpenStream* r) { r->mutable_pipeline_options(); }},
      {"OpenStream.seq_len", [](wire::OpenStream* r) { r->set_seq_len(128); }},
      {"OpenStream.crop_size", [](wire::OpenStream* r) { r->set_crop_size(224); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    auto r = request();
    c.set(&r);
    expect_error(r, ErrorCode::kInvalidArgument, std::string("leave ") + c.field);
  }
  auto subset = request();
  subset.mutable_subset();
  expect_error(subset, ErrorCode::kInvalidArgument, "torch.utils.data.Subset as the dataset");
}

TEST_F(PlanExternalTest, SizeZeroOrOverTheBoundIsRefused) {
  auto r = request();
  r.mutable_external()->set_size(0);
  expect_error(r, ErrorCode::kInvalidArgument, "external dataset size 0 is out of range");
  r.mutable_external()->set_size(kMaxExternalSize + 1);
  expect_error(r, ErrorCode::kInvalidArgument, "len(dataset)");
}

TEST_F(PlanExternalTest, BadRepeatedOrReservedFieldNamesAreRefusedNamingTheField) {
  for (const std::string& bad : {std::string(""), std::string("a b"), std::string(65, 'x'), std::string("index")}) {
    auto r = request();
    r.mutable_external()->mutable_fields(1)->set_name(bad);
    expect_error(r, ErrorCode::kInvalidArgument, "external dataset field 1: name '" + bad.substr(0, 80) + "'");
  }
  auto twice = request();
  twice.mutable_external()->mutable_fields(1)->set_name("image");
  expect_error(twice, ErrorCode::kInvalidArgument, "field 1: name 'image'");
  expect_error(twice, ErrorCode::kInvalidArgument, "repeats another field's");
}

TEST_F(PlanExternalTest, ALongNonAsciiFieldNameIsQuotedCutAtACharacterBoundary) {
  // The refusal travels in a proto3 string: cut inside a character, the client could not parse the reply at all.
  std::string bad = "x";
  while (bad.size() < 200) bad += "\xc3\xa9";  // é, two bytes: one across byte 80
  auto r = request();
  r.mutable_external()->mutable_fields(1)->set_name(bad);
  expect_error(r, ErrorCode::kInvalidArgument, "name '" + bad.substr(0, 79) + "' is not");
  wire::Error e;
  e.set_message(plan_of(r).error().message());
  wire::Error parsed;
  EXPECT_TRUE(parsed.ParseFromString(e.SerializeAsString())) << "the refusal is not valid UTF-8";
}

TEST_F(PlanExternalTest, UnknownDTypesAndBadShapesAreRefusedNamingTheField) {
  for (int dtype : {0 /* unspecified */, 99}) {
    auto r = request();
    r.mutable_external()->mutable_fields(1)->set_dtype(static_cast<wire::DType>(dtype));
    expect_error(r, ErrorCode::kInvalidArgument, "field 1 ('label'): dtype " + std::to_string(dtype) + " unknown");
  }
  auto deep = request();
  for (int i = 0; i < 9; ++i) deep.mutable_external()->mutable_fields(1)->add_sample_shape(1);
  expect_error(deep, ErrorCode::kInvalidArgument, "field 1 ('label'): 9 dimensions, over the 8 supported");
  auto eight = request();
  for (int i = 0; i < 8; ++i) eight.mutable_external()->mutable_fields(1)->add_sample_shape(1);
  EXPECT_TRUE(plan_of(eight).ok()) << "8 dimensions are supported";
  auto negative = request();
  negative.mutable_external()->mutable_fields(0)->set_sample_shape(1, -4);
  expect_error(negative, ErrorCode::kInvalidArgument, "field 0 ('image'): dimension -4 is negative");
}

TEST_F(PlanExternalTest, ASampleOverTheSegmentLimitIsRefusedNamingTheKey) {
  auto r = request();
  auto* image = r.mutable_external()->mutable_fields(0);
  image->clear_sample_shape();
  for (int64_t d : {int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20}) image->add_sample_shape(d);  // 2^62 B
  expect_error(r, ErrorCode::kResourceExhausted, "field 0 ('image'): one sample is over limits.max_segment_bytes");
  context_.limits.max_segment_bytes = 1 << 16;
  auto small = request();
  small.set_batch_size(300);  // 300 x 242 bytes, over 64 KiB: the whole segment is checked too
  expect_error(small, ErrorCode::kResourceExhausted, "limits.max_segment_bytes");
}

TEST_F(PlanExternalTest, WorkersOverTheLimitAreRefusedNamingTheKey) {
  context_.limits.max_attached_workers = 4;
  EXPECT_TRUE(plan_of(request()).ok()) << "4 workers, at the limit";
  auto r = request();
  r.mutable_external()->set_workers(5);
  expect_error(r, ErrorCode::kResourceExhausted, "num_workers 5");
  expect_error(r, ErrorCode::kResourceExhausted, "limits.max_attached_workers = 4");
}

TEST_F(PlanExternalTest, RoundRobinNeedsWholeBatches) {
  wire::OpenStream r = request();
  r.mutable_external()->set_round_robin(true);
  expect_error(r, ErrorCode::kInvalidArgument, "round_robin needs whole_batches");
  r.mutable_external()->set_whole_batches(true);
  auto p = plan_of(r);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_TRUE(p->external_round_robin);
}

}  // namespace
}  // namespace batchd::daemon
