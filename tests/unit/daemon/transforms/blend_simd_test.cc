// The vectorized Blend and L sum (color/blend_simd.h) against Pillow's scalar arithmetic they replace (pil::Blend,
// pil::luma in color/pil_pixel.h), bit for bit, on every Highway target this build compiled and this CPU runs:
// widths around the vector lengths (the scalar form finishes a row), factors inside [0, 1] and outside (the clip),
// a constant degenerate and each pixel's own L; random bytes plus the extremes 0 and 255.

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <random>
#include <string>
#include <vector>

#include "transforms/kernels/color/blend_simd.h"
#include "transforms/kernels/color/pil_pixel.h"

namespace batchd::daemon {
namespace {

RgbImage random_image(int w, int h, std::mt19937& rng) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (auto& b : img.pixels) b = static_cast<uint8_t>(rng());
  img.pixels[0] = 0;
  img.pixels.back() = 255;
  return img;
}

class BlendSimdTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_P(BlendSimdTest, EqualsPillowsScalarBlendBitForBit) {
  std::mt19937 rng(11);
  for (const int w : {1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 224}) {
    for (const float alpha : {0.0f, 0.37f, 0.6f, 0.999f, 1.4f, 1.9f, 3.0f}) {
      for (const int degenerate : {kPerPixelLuma, 0, 117, 255}) {
        SCOPED_TRACE(::testing::Message() << "w " << w << " alpha " << alpha << " degenerate " << degenerate);
        RgbImage img = random_image(w, 3, rng), want = img;
        const pil::Blend blend(alpha);
        for (size_t i = 0; i < want.pixels.size(); i += 3) {
          uint8_t* p = want.pixels.data() + i;
          const int d = degenerate == kPerPixelLuma ? pil::luma(p[0], p[1], p[2]) : degenerate;
          for (int c = 0; c < 3; ++c) p[c] = blend(d, p[c]);
        }
        blend_image(img, alpha, degenerate);
        ASSERT_EQ(img.pixels, want.pixels);
      }
    }
  }
}

TEST_P(BlendSimdTest, LumaSumEqualsTheScalarSum) {
  std::mt19937 rng(5);
  for (const int w : {1, 5, 16, 17, 224, 1000}) {
    const RgbImage img = random_image(w, 7, rng);
    uint64_t want = 0;
    for (size_t i = 0; i < img.pixels.size(); i += 3) {
      want += pil::luma(img.pixels[i], img.pixels[i + 1], img.pixels[i + 2]);
    }
    EXPECT_EQ(luma_sum(img), want) << "w " << w;
  }
  RgbImage white;  // a sum past 2^31 (255 * 9e6 = 2.3e9): one int32 accumulator over the image would overflow
  white.width = 3000;
  white.height = 3000;
  white.pixels.assign(size_t{3000} * 3000 * 3, 255);
  EXPECT_EQ(luma_sum(white), uint64_t{255} * 3000 * 3000);
}

INSTANTIATE_TEST_SUITE_P(Targets, BlendSimdTest, ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::string(hwy::TargetName(info.param));
                         });

}  // namespace
}  // namespace batchd::daemon
