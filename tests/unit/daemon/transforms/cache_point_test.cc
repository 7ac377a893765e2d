// The cache op at plan (spec_plan.h: refused after a random op naming it, nested, twice, in batch_ops; where it
// may stand) and cache_prefix() (cache_point.h: the id of the ops before the point, and where a point that ends a
// float32 tail is taken).
#include "transforms/spec/cache_point.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "transforms/ops/op.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/presets/presets.h"

namespace batchd::daemon {
namespace {

using Params = std::vector<std::pair<std::string, wire::OpValue>>;

wire::Op op(const std::string& name, Params params = {}) {
  wire::Op o;
  o.set_name(name);
  for (auto& [k, v] : params) {
    auto* p = o.add_params();
    p->set_key(k);
    *p->mutable_value() = v;
  }
  return o;
}
wire::OpValue num(double v) { return ops::number_value(v); }
wire::OpValue nested(std::initializer_list<wire::Op> list) {
  wire::OpValue v;
  for (const auto& o : list) *v.mutable_ops()->add_ops() = o;
  return v;
}

wire::PipelineSpec spec_of(std::initializer_list<wire::Op> list, std::initializer_list<wire::Op> batch = {}) {
  wire::PipelineSpec s;
  for (const auto& o : list) *s.add_ops() = o;
  for (const auto& o : batch) *s.add_batch_ops() = o;
  return s;
}

Result<ops::PlannedSpec> plan(const wire::PipelineSpec& spec) {
  static const ops::OpLimits limits;
  return ops::plan_spec(spec, {&limits, 10});
}

std::string refusal(const wire::PipelineSpec& spec) {
  auto planned = plan(spec);
  EXPECT_FALSE(planned.ok());
  return planned.ok() ? "" : planned.error().message();
}

CachePrefix prefix_of(const wire::PipelineSpec& spec) {
  auto planned = plan(spec);
  EXPECT_TRUE(planned.ok()) << planned.error().message();
  EXPECT_GE(planned->cache_at, 0);
  return cache_prefix(planned->canonical, planned->cache_at);
}

const wire::Op kResize = op("resize", {{"size", num(256)}});
const wire::Op kCrop = op("center_crop", {{"size", num(224)}});
const wire::Op kCache = op("cache");
const wire::Op kToTensor = op("to_tensor");

TEST(CachePlanTest, ARandomOpBeforeTheCacheIsRefusedNamingIt) {
  const std::string with_decode = refusal(spec_of({op("decode"), op("random_resized_crop", {{"size", num(224)}}),
                                                   kCache, kToTensor}));
  EXPECT_NE(with_decode.find("ops[2] (cache): ops[1] (random_resized_crop) before it is random"), std::string::npos)
      << with_decode;
  // Positions are the request's, not the canonical spec's (which gains a decode in front).
  const std::string without = refusal(spec_of({kResize, op("horizontal_flip"), kCrop, kCache, kToTensor}));
  EXPECT_NE(without.find("ops[3] (cache): ops[1] (horizontal_flip) before it is random"), std::string::npos)
      << without;
  const std::string wrapped = refusal(spec_of({op("random_apply", {{"ops", nested({kResize})}}), kCrop, kCache,
                                               kToTensor}));
  EXPECT_NE(wrapped.find("ops[0] (random_apply) before it is random"), std::string::npos) << wrapped;
}

TEST(CachePlanTest, RandomOpsAfterTheCacheAreAccepted) {
  auto planned = plan(spec_of({op("decode", {{"max_side", num(256)}}), kCache,
                               op("random_resized_crop", {{"size", num(224)}}), op("horizontal_flip"), kToTensor,
                               op("normalize", {{"mean", ops::numbers_value({0.485, 0.456, 0.406})},
                                                {"std", ops::numbers_value({0.229, 0.224, 0.225})}})}));
  ASSERT_TRUE(planned.ok()) << planned.error().message();
  EXPECT_EQ(planned->cache_at, 1);
}

TEST(CachePlanTest, ACacheNestedInAnotherOpIsRefused) {
  const std::string m = refusal(spec_of({kResize, op("random_apply", {{"ops", nested({kCrop, kCache})}}), kCrop,
                                         kToTensor}));
  EXPECT_NE(m.find("ops[1].ops[1] (cache): the cache point goes at the top level of ops, not inside random_apply"),
            std::string::npos)
      << m;
}

TEST(CachePlanTest, TwoCachePointsAreRefused) {
  const std::string m = refusal(spec_of({kResize, kCache, kCrop, kCache, kToTensor}));
  EXPECT_NE(m.find("ops[3] (cache): a spec has one cache point, and ops[1] is one already"), std::string::npos) << m;
}

TEST(CachePlanTest, ACacheInBatchOpsIsRefused) {
  const std::string m = refusal(spec_of({kResize, kCrop, kToTensor}, {kCache}));
  EXPECT_NE(m.find("batch_ops[0] (cache)"), std::string::npos) << m;
}

TEST(CachePlanTest, ACacheRightAfterDecodeOrFirstIsThePointAfterDecode) {
  auto after = plan(spec_of({op("decode"), kCache, kResize, kCrop, kToTensor}));
  ASSERT_TRUE(after.ok()) << after.error().message();
  EXPECT_EQ(after->cache_at, 1);
  // Decode is implicit: a spec that starts with the cache point caches the decoded image, the same entry.
  auto first = plan(spec_of({kCache, kResize, kCrop, kToTensor}));
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->canonical.ops(0).name(), "decode");
  EXPECT_EQ(first->cache_at, 1);
  EXPECT_EQ(first->canonical.SerializeAsString(), after->canonical.SerializeAsString());
  const CachePrefix p = cache_prefix(first->canonical, first->cache_at);
  EXPECT_EQ(p.point, 1);
  EXPECT_EQ(p.text, "decode");
  // Before an explicit decode it is not a place: decode comes first.
  const std::string m = refusal(spec_of({kCache, op("decode"), kResize, kCrop, kToTensor}));
  EXPECT_NE(m.find("ops[1] (decode)"), std::string::npos) << m;
}

TEST(CachePrefixTest, TheSameOpsGiveTheSameIdAndOtherParametersAnother) {
  const CachePrefix a = prefix_of(spec_of({kResize, kCrop, kCache, kToTensor}));
  // The same ops spelled otherwise (defaults written, decode explicit), and other ops after the point.
  const CachePrefix b = prefix_of(spec_of({op("decode", {{"exact_decode", ops::flag_value(false)}}),
                                           op("resize", {{"size", ops::numbers_value({256})}}),
                                           op("center_crop", {{"size", ops::numbers_value({224})}}), kCache,
                                           op("horizontal_flip"), op("pil_to_tensor")}));
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.point, 3);
  EXPECT_EQ(a.text, "decode -> resize -> center_crop");
  EXPECT_NE(a.id, prefix_of(spec_of({op("resize", {{"size", num(232)}}), kCrop, kCache, kToTensor})).id);
  EXPECT_NE(a.id, prefix_of(spec_of({kResize, op("center_crop", {{"size", num(192)}}), kCache, kToTensor})).id);
  EXPECT_NE(a.id, prefix_of(spec_of({op("decode", {{"exact_decode", ops::flag_value(true)}}), kResize, kCrop, kCache,
                                     kToTensor}))
                      .id);
  EXPECT_NE(a.id, prefix_of(spec_of({kResize, kCache, kCrop, kToTensor})).id) << "a shorter prefix";
}

TEST(CachePrefixTest, Val224CachedTakesThePointBeforeToTensorAndVal224U8KeepsItAtTheEnd) {
  auto val = preset_spec("val224_cached", {});
  ASSERT_TRUE(val.ok()) << val.error().message();
  const CachePrefix f = prefix_of(*val);
  EXPECT_EQ(f.point, 3) << "the uint8 image before to_tensor -> normalize";
  EXPECT_EQ(f.text, "decode -> resize -> center_crop");
  // The same entry as a spec that puts the point there itself.
  wire::PipelineSpec explicit_point = *val;
  for (int i = explicit_point.ops_size() - 1; i > 3; --i) explicit_point.mutable_ops()->SwapElements(i, i - 1);
  ASSERT_EQ(explicit_point.ops(3).name(), "cache");
  EXPECT_EQ(prefix_of(explicit_point).id, f.id);

  auto u8 = preset_spec("val224_u8_cached", {});
  ASSERT_TRUE(u8.ok()) << u8.error().message();
  const CachePrefix b = prefix_of(*u8);
  EXPECT_EQ(b.point, 4) << "the slot's bytes: pil_to_tensor's uint8 output";
  EXPECT_EQ(b.text, "decode -> resize -> center_crop -> pil_to_tensor");
  EXPECT_NE(b.id, f.id);
}

}  // namespace
}  // namespace batchd::daemon
