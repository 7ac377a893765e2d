// The vectorized resampling passes (resample_passes.h) against Pillow's fixed-point sums written plainly, on every
// Highway target this build compiled and this CPU runs (SSE4, AVX2, AVX-512, the portable fallback), so a target the
// CPU would not pick by itself is tested too. Taps come from resample_coeffs() (bilinear and bicubic, shrinking and
// enlarging: bicubic's negative taps make the clamping matter); inputs are random bytes.

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "transforms/kernels/resample.h"
#include "transforms/kernels/resample_passes.h"

namespace batchd::daemon {
namespace {

uint8_t clip8(int64_t acc) {  // Pillow's clip8 of a 22-bit fixed-point sum
  const int64_t v = acc >> 22;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// out_rows x out_w pixels: each value = clip8(2^21 + sum over taps), taps along the rows (vertical) or columns.
std::vector<uint8_t> reference(const std::vector<uint8_t>& in, int in_w, const ResampleCoeffs& c, int count,
                               int other, bool vertical) {
  std::vector<uint8_t> out(static_cast<size_t>(count) * other * 3);
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < other; ++j) {
      for (int ch = 0; ch < 3; ++ch) {
        int64_t acc = 1 << 21;
        for (int t = 0; t < c.bounds[2 * i + 1]; ++t) {
          const int s = c.bounds[2 * i] + t;
          const size_t at = vertical ? (static_cast<size_t>(s) * in_w + j) * 3 : (static_cast<size_t>(j) * in_w + s) * 3;
          acc += static_cast<int64_t>(in[at + ch]) * c.taps[static_cast<size_t>(i) * c.ksize + t];
        }
        out[vertical ? (static_cast<size_t>(i) * other + j) * 3 + ch : (static_cast<size_t>(j) * count + i) * 3 + ch] =
            clip8(acc);
      }
    }
  }
  return out;
}

class ResamplePassesTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

TEST_P(ResamplePassesTest, EqualPillowsFixedPointSums) {
  std::mt19937 rng(24);
  struct Case { int in, out; ResampleFilter filter; };
  const Case cases[] = {{500, 224, ResampleFilter::kBilinear}, {333, 224, ResampleFilter::kBilinear},
                        {1200, 97, ResampleFilter::kBilinear},  {150, 224, ResampleFilter::kBilinear},
                        {500, 223, ResampleFilter::kBicubic},   {90, 301, ResampleFilter::kBicubic},
                        {7, 3, ResampleFilter::kBilinear},      {2000, 224, ResampleFilter::kBicubic}};
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message() << k.in << " -> " << k.out << " filter " << static_cast<int>(k.filter));
    const int other = 37;  // the extent of the axis not resampled
    const ResampleCoeffs c = resample_coeffs(pillow_axis(k.in, 0.0f, static_cast<float>(k.in), k.out), k.filter);
    const PassTaps taps{c.bounds.data(), c.taps.data(), c.ksize};
    // Exactly sized input: the last rows' windows would pass its end, so they take the one-tap-at-a-time path.
    std::vector<uint8_t> in(static_cast<size_t>(k.in) * other * 3);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> v(static_cast<size_t>(k.out) * other * 3), h(v.size());
    vertical_pass(in.data(), static_cast<size_t>(other) * 3, static_cast<size_t>(other) * 3, taps, 0, k.out, v.data());
    EXPECT_EQ(v, reference(in, other, c, k.out, other, /*vertical=*/true));
    horizontal_pass(in.data(), static_cast<size_t>(k.in) * 3, in.data() + in.size(), other, taps, 0, k.out, h.data());
    EXPECT_EQ(h, reference(in, k.in, c, k.out, other, /*vertical=*/false));
    // A shifted origin (x_shift) with readable slack after the input: every row vectorized.
    std::vector<uint8_t> padded(static_cast<size_t>(k.in + 2) * other * 3 + 256);
    for (int r = 0; r < other; ++r) {
      std::copy_n(in.begin() + static_cast<ptrdiff_t>(r) * k.in * 3, k.in * 3,
                  padded.begin() + (static_cast<ptrdiff_t>(r) * (k.in + 2) + 2) * 3);
    }
    std::fill(h.begin(), h.end(), 0);
    horizontal_pass(padded.data(), static_cast<size_t>(k.in + 2) * 3, padded.data() + padded.size(), other, taps,
                    -2, k.out, h.data());
    EXPECT_EQ(h, reference(in, k.in, c, k.out, other, /*vertical=*/false));
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, ResamplePassesTest, ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return std::string(hwy::TargetName(info.param));
                         });

}  // namespace
}  // namespace batchd::daemon
