// Bilinear resampling against Pillow (python3-pil), the fast order against its plainly written arithmetic, input
// windows, and the crop geometry against torchvision's formulas. Inputs are real photographs
// (image_test_support.h).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

#include "image_test_support.h"

namespace batchd::daemon {
namespace {

using namespace batchd::daemon::image_test;  // NOLINT

// Our resample of `src` vs Pillow's (`pil_args` after "<raw> w h <dst>"); returns the max difference.
int resample_vs_pillow(const RgbImage& src, int xo, int yo, const ResampleAxis& x, const ResampleAxis& y,
                       const std::string& pil_cmd, const std::string& pil_args,
                       ResampleOrder order = ResampleOrder::kPillow) {
  std::vector<uint8_t> ours(static_cast<size_t>(x.out_count) * y.out_count * 3), scratch_buf;
  resample_bilinear(src, xo, yo, x, y, ours.data(), &scratch_buf, order);
  EXPECT_EQ(sh(helper(args(pil_cmd, tmp("src.raw"), src.width, src.height, tmp("pil.raw"), pil_args))), 0);
  return max_diff(ours, slurp(tmp("pil.raw")));
}

TEST(ResampleTest, BilinearEqualsPillowOnRealPhotos) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  for (const std::string& p : {scratch().photos[0], scratch().photos[4]}) {
    SCOPED_TRACE(p);
    RgbImage src;
    ASSERT_TRUE(decode_to_src_raw(p, &src).ok());
    const int w = src.width, h = src.height;
    auto full = [](int in, int out) { return ResampleAxis{in, 0.0, double(in), out, 0, out}; };
    // Observed max difference in every case below: 0 (the arithmetic is Pillow's, bit for bit).
    for (auto [W, H] : {std::pair{224, 168}, {w / 3, h * 2}, {w * 2, h / 3}, {w + 37, h + 11}, {w, h}}) {
      SCOPED_TRACE(std::to_string(W) + "x" + std::to_string(H));
      EXPECT_EQ(resample_vs_pillow(src, 0, 0, full(w, W), full(h, H), "resize", args(W, H)), 0);
    }
    // Crop then resize (RandomResizedCrop): PIL crops, we resample the sub-rectangle in place.
    const int l = 37, t = 21, r = l + w / 2 + 1, b = t + h / 3;
    EXPECT_EQ(resample_vs_pillow(src, l, t, full(r - l, 224), full(b - t, 224), "crop", args(l, t, r, b, 224, 224)),
              0);
    // A fractional box (Pillow's resize(box=...)).
    EXPECT_EQ(resample_vs_pillow(src, 0, 0, {w, 10.5, w - 20.25, 224, 0, 224}, {h, 3.75, h - 0.5, 160, 0, 160},
                                 "resize", args(224, 160, 10.5, 3.75, w - 20.25, h - 0.5)), 0);
    // Resize(256) + CenterCrop(224) computing only the window: PIL computes all of it, then crops.
    int rw = 0, rh = 0;
    resize_shorter_side(w, h, 256, &rw, &rh);
    const int cl = center_crop_offset(rw, 224), ct = center_crop_offset(rh, 224);
    EXPECT_EQ(resample_vs_pillow(src, 0, 0, {w, 0.0, double(w), rw, cl, 224}, {h, 0.0, double(h), rh, ct, 224},
                                 "window", args(rw, rh, cl, ct)), 0);
  }
}

// The fast order's arithmetic written plainly: Pillow's fixed point (22 fractional bits, round half up, clamp),
// vertical pass over the extent's columns first, then horizontal.
std::vector<uint8_t> fast_order_reference(const RgbImage& src, int xo, int yo, const ResampleAxis& x,
                                          const ResampleAxis& y) {
  const ResampleCoeffs cx = resample_coeffs(x), cy = resample_coeffs(y);
  auto clip = [](int64_t v) { return static_cast<uint8_t>(std::clamp<int64_t>(v >> 22, 0, 255)); };
  const int cols = x.in_size * 3;
  std::vector<uint8_t> tmp(static_cast<size_t>(y.out_count) * cols), out(static_cast<size_t>(y.out_count) * x.out_count * 3);
  for (int j = 0; j < y.out_count; ++j) {
    for (int c = 0; c < cols; ++c) {
      int64_t acc = 1 << 21;
      for (int t = 0; t < cy.bounds[2 * j + 1]; ++t) {
        acc += int64_t{src.row(yo + cy.bounds[2 * j] + t)[xo * 3 + c]} * cy.taps[j * cy.ksize + t];
      }
      tmp[static_cast<size_t>(j) * cols + c] = clip(acc);
    }
  }
  for (int j = 0; j < y.out_count; ++j) {
    for (int i = 0; i < x.out_count; ++i) {
      for (int ch = 0; ch < 3; ++ch) {
        int64_t acc = 1 << 21;
        for (int t = 0; t < cx.bounds[2 * i + 1]; ++t) {
          acc += int64_t{tmp[static_cast<size_t>(j) * cols + (cx.bounds[2 * i] + t) * 3 + ch]} * cx.taps[i * cx.ksize + t];
        }
        out[(static_cast<size_t>(j) * x.out_count + i) * 3 + ch] = clip(acc);
      }
    }
  }
  return out;
}

// The fast order (vertical pass first, two pixels per step horizontally): exactly its plain-written arithmetic, and
// within one level of Pillow's output, for even and odd output widths, shrinking and enlarging.
TEST(ResampleTest, FastOrderWithinOneLevelOfPillow) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  const std::string& p = scratch().photos[0];
  RgbImage src;
  ASSERT_TRUE(decode_to_src_raw(p, &src).ok());
  const int w = src.width, h = src.height;
  for (auto [l, t, r, b, W, H] : {std::tuple{37, 21, 37 + w / 2 + 1, 21 + h / 3, 224, 224},
                                  {0, 0, w, h, 223, 131}, {5, 9, 105, 90, 224, 224}, {0, 0, w, h, w - 1, h}}) {
    SCOPED_TRACE(args(l, t, r, b, W, H));
    auto axis = [](int in, int out) { return ResampleAxis{in, 0.0, double(in), out, 0, out}; };
    EXPECT_LE(resample_vs_pillow(src, l, t, axis(r - l, W), axis(b - t, H), "crop", args(l, t, r, b, W, H),
                                 ResampleOrder::kFast), 1);
    std::vector<uint8_t> ours(static_cast<size_t>(W) * H * 3), scratch_buf;
    resample_bilinear(src, l, t, axis(r - l, W), axis(b - t, H), ours.data(), &scratch_buf, ResampleOrder::kFast);
    EXPECT_TRUE(ours == fast_order_reference(src, l, t, axis(r - l, W), axis(b - t, H)))
        << "max diff " << max_diff(ours, fast_order_reference(src, l, t, axis(r - l, W), axis(b - t, H)));
  }
}

// val224's fast path decodes only resample_input_range() of each axis and resamples that window with a negative
// origin: the output must equal the whole image's, in both orders.
TEST(ResampleTest, WindowOfTheInputRangeGivesTheWholeImagesOutput) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  for (const std::string& p : {scratch().photos[0], scratch().photos[4]}) {
    RgbImage src;
    ASSERT_TRUE(decode_file(p, {1, 1}, &src).ok());
    int nw = 0, nh = 0;
    resize_shorter_side(src.width, src.height, 256, &nw, &nh);
    const ResampleAxis x{src.width, 0.0, double(src.width), nw, center_crop_offset(nw, 224), 224};
    const ResampleAxis y{src.height, 0.0, double(src.height), nh, center_crop_offset(nh, 224), 224};
    const auto [x0, x1] = resample_input_range(x);
    const auto [y0, y1] = resample_input_range(y);
    ASSERT_LT(x1 - x0, src.width) << "the center crop should not need every column";
    RgbImage window;
    window.width = x1 - x0;
    window.height = y1 - y0;
    for (int r = y0; r < y1; ++r) window.pixels.insert(window.pixels.end(), src.row(r) + x0 * 3, src.row(r) + x1 * 3);
    for (ResampleOrder order : {ResampleOrder::kPillow, ResampleOrder::kFast}) {
      std::vector<uint8_t> whole(224 * 224 * 3), part(224 * 224 * 3), scratch_buf;
      resample_bilinear(src, 0, 0, x, y, whole.data(), &scratch_buf, order);
      resample_bilinear(window, -x0, -y0, x, y, part.data(), &scratch_buf, order);
      EXPECT_TRUE(whole == part) << p << " order " << int(order) << " max diff " << max_diff(whole, part);
    }
  }
}

TEST(RandomResizedCropTest, BoxesFollowTorchvisionRanges) {
  const double total = 500.0 * 375.0;
  double min_area = 2, max_area = 0, min_ratio = 2, max_ratio = 0;
  for (int64_t i = 0; i < 20000; ++i) {
    SampleRng rng(42, 3, i);
    const CropBox b = random_resized_crop_params(500, 375, rng);
    ASSERT_TRUE(b.left >= 0 && b.top >= 0 && b.width > 0 && b.height > 0 && b.left + b.width <= 500 &&
                b.top + b.height <= 375) << i << ": " << b.left << "," << b.top << " " << b.width << "x" << b.height;
    // w and h are rounded from reals W, H with W*H in [0.08, 1] * total and W/H in [3/4, 4/3]; |w-W|, |h-H| <= 1/2.
    const double w = b.width, h = b.height;
    ASSERT_GE((w + 0.5) * (h + 0.5), 0.08 * total) << i;
    ASSERT_LE((w - 0.5) * (h - 0.5), total) << i;
    ASSERT_GE((w + 0.5) / (h - 0.5), 3.0 / 4.0) << i;
    ASSERT_LE((w - 0.5) / (h + 0.5), 4.0 / 3.0) << i;
    min_area = std::min(min_area, w * h / total), max_area = std::max(max_area, w * h / total);
    min_ratio = std::min(min_ratio, w / h), max_ratio = std::max(max_ratio, w / h);
  }
  // The draws span the ranges rather than sitting in a corner of them.
  EXPECT_LT(min_area, 0.085);
  EXPECT_GT(max_area, 0.9);
  EXPECT_LT(min_ratio, 0.76);
  EXPECT_GT(max_ratio, 1.32);
}

TEST(RandomResizedCropTest, SameKeysSameBoxOtherIndexOtherBox) {
  auto box = [](uint64_t seed, uint64_t epoch, int64_t index) {
    SampleRng rng(seed, epoch, index);
    const CropBox b = random_resized_crop_params(500, 375, rng);
    return std::tuple{b.left, b.top, b.width, b.height};
  };
  int same_index = 0, same_epoch = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(box(7, 1, i), box(7, 1, i));
    same_index += box(7, 1, i) == box(7, 1, i + 1);
    same_epoch += box(7, 1, i) == box(7, 2, i);
  }
  EXPECT_LT(same_index, 10);
  EXPECT_LT(same_epoch, 10);
  EXPECT_NE(box(7, 1, 0), box(8, 1, 0));
}

TEST(RandomResizedCropTest, ExtremeAspectFallsBackToTorchvisionCentralCrop) {
  SampleRng rng(1, 0, 0);
  const CropBox wide = random_resized_crop_params(1000, 10, rng);
  EXPECT_EQ(std::tuple(wide.left, wide.top, wide.width, wide.height), std::tuple((1000 - 13) / 2, 0, 13, 10));
  const CropBox tall = random_resized_crop_params(10, 1000, rng);
  EXPECT_EQ(std::tuple(tall.left, tall.top, tall.width, tall.height), std::tuple(0, (1000 - 13) / 2, 10, 13));
}

TEST(RandomResizedCropTest, ResizeAndCenterCropGeometryMatchTorchvision) {
  int w = 0, h = 0;
  resize_shorter_side(500, 375, 256, &w, &h);
  EXPECT_EQ(std::pair(w, h), std::pair(341, 256));
  resize_shorter_side(375, 500, 256, &w, &h);
  EXPECT_EQ(std::pair(w, h), std::pair(256, 341));
  EXPECT_EQ(center_crop_offset(341, 224), 58);  // round(58.5) == 58: half to even
  EXPECT_EQ(center_crop_offset(342, 224), 59);
  EXPECT_EQ(center_crop_offset(343, 224), 60);  // round(59.5) == 60
  EXPECT_EQ(center_crop_offset(224, 224), 0);
}


}  // namespace
}  // namespace batchd::daemon
