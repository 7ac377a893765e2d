// NEAREST and BICUBIC resampling (resample.h) against Pillow (python3-pil) on real photographs: whole images, boxes
// (float boxes as Pillow takes them), computed windows and partial sources; BILINEAR's own tests are
// resample_test.cc.

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

#include "image_test_support.h"

namespace batchd::daemon {
namespace {

using namespace batchd::daemon::image_test;  // NOLINT

const char* name(ResampleFilter f) { return f == ResampleFilter::kNearest ? "nearest" : "bicubic"; }

std::vector<uint8_t> ours(const RgbImage& src, const ResampleAxis& x, const ResampleAxis& y, ResampleFilter f,
                          ResampleOrder order = ResampleOrder::kPillow) {
  std::vector<uint8_t> out(static_cast<size_t>(x.out_count) * y.out_count * 3), scratch_buf;
  resample(src, 0, 0, x, y, f, out.data(), &scratch_buf, order);
  return out;
}

std::vector<uint8_t> pillow(const RgbImage& src, int W, int H, ResampleFilter f, const std::string& box = "") {
  EXPECT_EQ(sh(helper(args("filter", tmp("src.raw"), src.width, src.height, tmp("pil.raw"), W, H, name(f), box))), 0);
  return slurp(tmp("pil.raw"));
}

class FilterTest : public ::testing::TestWithParam<ResampleFilter> {};

TEST_P(FilterTest, EqualsPillowOnRealPhotos) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  const ResampleFilter f = GetParam();
  for (const std::string& p : {scratch().photos[0], scratch().photos[4]}) {
    SCOPED_TRACE(p);
    RgbImage src;
    ASSERT_TRUE(decode_to_src_raw(p, &src).ok());
    const int w = src.width, h = src.height;
    // Observed max difference in every case: 0.
    for (auto [W, H] : {std::pair{224, 168}, {w / 3, h * 2}, {w * 2, h / 3}, {w + 37, h + 11}, {w, h}, {1, 1}}) {
      SCOPED_TRACE(args(W, H));
      EXPECT_EQ(max_diff(ours(src, pillow_axis(w, 0, w, W), pillow_axis(h, 0, h, H), f), pillow(src, W, H, f)), 0);
    }
    // Boxes: fractional, and not representable in binary (Pillow rounds them, and their extent, to float).
    for (auto [x0, y0, x1, y1] : {std::tuple{10.5f, 3.75f, w - 20.25f, h - 0.5f},
                                  {0.1f, 0.3f, w - 0.7f, h - 0.6f}}) {
      SCOPED_TRACE(args(x0, y0, x1, y1));
      EXPECT_EQ(max_diff(ours(src, pillow_axis(w, x0, x1, 224), pillow_axis(h, y0, y1, 160), f),
                         pillow(src, 224, 160, f, args(x0, y0, x1, y1))), 0);
    }
  }
}

// A computed window (center crop after resize) equals that part of the whole output, also when the source holds
// only resample_input_range() of the extent (negative origin), as the fused decode path resamples.
TEST_P(FilterTest, WindowOfTheInputRangeGivesTheWholeImagesOutput) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  const ResampleFilter f = GetParam();
  RgbImage src;
  ASSERT_TRUE(decode_file(scratch().photos[0], {1, 1}, &src).ok());
  for (int size : {256, 232, 640}) {
    SCOPED_TRACE(size);
    int nw = 0, nh = 0;
    resize_shorter_side(src.width, src.height, size, &nw, &nh);
    const int cl = center_crop_offset(nw, 224), ct = center_crop_offset(nh, 224);
    const std::vector<uint8_t> whole = ours(src, pillow_axis(src.width, 0, src.width, nw),
                                            pillow_axis(src.height, 0, src.height, nh), f);
    ResampleAxis x = pillow_axis(src.width, 0, src.width, nw), y = pillow_axis(src.height, 0, src.height, nh);
    x.out_begin = cl, x.out_count = 224, y.out_begin = ct, y.out_count = 224;
    const auto [x0, x1] = resample_input_range(x, f);
    const auto [y0, y1] = resample_input_range(y, f);
    ASSERT_LT(x1 - x0, src.width) << "the center crop should not need every column";
    RgbImage window;
    window.width = x1 - x0;
    window.height = y1 - y0;
    for (int r = y0; r < y1; ++r) window.pixels.insert(window.pixels.end(), src.row(r) + x0 * 3, src.row(r) + x1 * 3);
    std::vector<uint8_t> part(224 * 224 * 3), scratch_buf;
    resample(window, -x0, -y0, x, y, f, part.data(), &scratch_buf);
    std::vector<uint8_t> expect;
    for (int r = ct; r < ct + 224; ++r) {
      expect.insert(expect.end(), whole.begin() + (static_cast<size_t>(r) * nw + cl) * 3,
                    whole.begin() + (static_cast<size_t>(r) * nw + cl + 224) * 3);
    }
    EXPECT_EQ(max_diff(part, expect), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Filters, FilterTest, ::testing::Values(ResampleFilter::kNearest, ResampleFilter::kBicubic),
                         [](const auto& info) { return std::string(name(info.param)); });

// Bicubic ignores the fast order (vertical pass first): that order differs from Pillow's by up to 3 levels for
// bicubic (measured here before it was refused), so kFast must give Pillow's output exactly.
TEST(BicubicTest, FastOrderRunsPillowsOrder) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  RgbImage src;
  ASSERT_TRUE(decode_to_src_raw(scratch().photos[0], &src).ok());
  const int w = src.width, h = src.height;
  for (auto [W, H] : {std::pair{224, 224}, {223, 131}, {w * 2 + 1, h + 5}}) {
    SCOPED_TRACE(args(W, H));
    EXPECT_EQ(max_diff(ours(src, pillow_axis(w, 0, w, W), pillow_axis(h, 0, h, H), ResampleFilter::kBicubic,
                            ResampleOrder::kFast),
                       pillow(src, W, H, ResampleFilter::kBicubic)), 0);
  }
}

// Bicubic's negative lobes overshoot: a hard edge must clamp to [0, 255] in each pass, as Pillow's clip8 does.
TEST(BicubicTest, OvershootClampsAtAHardEdge) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  RgbImage src;
  src.width = 16;
  src.height = 4;
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 16; ++x)
      for (int c = 0; c < 3; ++c) src.pixels.push_back(x < 8 ? (c == 0 ? 255 : 0) : (c == 1 ? 255 : 1));
  spit(tmp("src.raw"), src.pixels);
  for (int W : {37, 5, 16 * 7}) {
    EXPECT_EQ(max_diff(ours(src, pillow_axis(16, 0, 16, W), pillow_axis(4, 0, 4, 9), ResampleFilter::kBicubic),
                       pillow(src, W, 9, ResampleFilter::kBicubic)), 0) << W;
  }
}

}  // namespace
}  // namespace batchd::daemon
