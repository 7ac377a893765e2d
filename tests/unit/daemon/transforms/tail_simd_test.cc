// The vectorized float tail (tail_simd.h) against the scalar table it replaces (FusedTail::write), bit for bit, on
// every Highway target this build compiled and this CPU runs, so a target the CPU would not pick by itself is tested
// too: widths around the vector lengths (the table finishes a row), both flips, CHW and HWC, and the chains a spec
// can end with (to_tensor; + normalize; pil_to_tensor + convert_image_dtype + normalize twice). Inputs: random bytes.

#include <gtest/gtest.h>
#include <google/protobuf/text_format.h>
#include <hwy/targets.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "transforms/spec/fused_tail.h"

namespace batchd::daemon {
namespace {

FusedTail tail_of(const std::string& ops_text) {
  wire::PipelineSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ops_text, &spec)) << ops_text;
  FusedTail tail;
  EXPECT_TRUE(find_tail(spec.ops(), &tail));
  return tail;
}

const char* const kNormalize = R"pb(
    ops { name: "normalize"
          params { key: "mean" value { numbers { values: 0.485 values: 0.456 values: 0.406 } } }
          params { key: "std" value { numbers { values: 0.229 values: 0.224 values: 0.225 } } } })pb";

class TailSimdTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_P(TailSimdTest, EqualsTheScalarTableBitForBit) {
  const std::string chains[] = {
      R"pb(ops { name: "to_tensor" })pb",
      std::string(R"pb(ops { name: "to_tensor" })pb") + kNormalize,
      std::string(R"pb(ops { name: "pil_to_tensor" }
                       ops { name: "convert_image_dtype" params { key: "dtype" value { text: "float32" } } })pb") +
          kNormalize + kNormalize,
  };
  std::mt19937 rng(7);
  int vectorized = 0;
  for (const std::string& ops : chains) {
    for (const bool hwc : {false, true}) {
      const char* layout = R"pb( ops { name: "layout" params { key: "order" value { text: "HWC" } } })pb";
      FusedTail tail = tail_of(ops + (hwc ? layout : ""));
      ASSERT_EQ(tail.dtype, wire::FLOAT32);
      ASSERT_EQ(tail.hwc, hwc);
      vectorized += tail.vector_float;
      for (const int w : {1, 3, 4, 7, 8, 15, 16, 17, 31, 33, 64, 224}) {
        RgbImage image;
        image.width = w;
        image.height = 5;
        image.pixels.resize(static_cast<size_t>(w) * 5 * 3);
        for (auto& b : image.pixels) b = static_cast<uint8_t>(rng());
        for (const bool flip_h : {false, true}) {
          for (const bool flip_v : {false, true}) {
            SCOPED_TRACE(::testing::Message() << ops << " hwc " << hwc << " w " << w << " flips " << flip_h << flip_v);
            std::vector<float> want(image.pixels.size(), -7.0f), got(image.pixels.size(), -9.0f);
            tail.write(image, flip_h, flip_v, want.data());
            tail.write_float(image, flip_h, flip_v, got.data());
            ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
          }
        }
      }
    }
  }
  EXPECT_EQ(vectorized, 6) << "a chain of to_tensor / normalize steps was not vectorized";
}

INSTANTIATE_TEST_SUITE_P(Targets, TailSimdTest, ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::string(hwy::TargetName(info.param));
                         });

}  // namespace
}  // namespace batchd::daemon
