// The geometry functions (transforms/kernels/geometry/*.h) on their own: numpy.pad's index maps, torchvision's size and
// offset rules, RandomCrop's paddings composed as maps and its draws. Their equality with torchvision on real
// photographs is tests/ops/test_geometry.py.

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "transforms/kernels/geometry/crop.h"
#include "transforms/kernels/geometry/pad.h"
#include "transforms/kernels/geometry/random_crop.h"
#include "transforms/kernels/geometry/resize.h"

namespace batchd::daemon::geometry {
namespace {

std::vector<int> axis(int n, int before, int after, PadMode mode) {
  std::vector<int> m;
  pad_axis_map(n, before, after, mode, &m);
  return m;
}

// Expected values: numpy 1.24's np.pad(np.arange(n), (before, after), mode).
TEST(PadAxisMapTest, FollowsNumpyPad) {
  using V = std::vector<int>;
  EXPECT_EQ(axis(3, 2, 2, PadMode::kConstant), (V{-1, -1, 0, 1, 2, -1, -1}));
  EXPECT_EQ(axis(3, 2, 4, PadMode::kEdge), (V{0, 0, 0, 1, 2, 2, 2, 2, 2}));
  EXPECT_EQ(axis(3, 2, 2, PadMode::kReflect), (V{2, 1, 0, 1, 2, 1, 0}));
  EXPECT_EQ(axis(3, 2, 2, PadMode::kSymmetric), (V{1, 0, 0, 1, 2, 2, 1}));
  // Longer than the axis: numpy reflects chunk by chunk, which is not the periodic extension.
  EXPECT_EQ(axis(3, 1, 8, PadMode::kReflect), (V{1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 0}));
  EXPECT_EQ(axis(3, 8, 1, PadMode::kReflect), (V{2, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2, 1}));
  EXPECT_EQ(axis(2, 5, 0, PadMode::kSymmetric), (V{0, 0, 1, 1, 0, 0, 1}));
  // One pixel: reflect and symmetric repeat it (numpy's legacy behaviour).
  EXPECT_EQ(axis(1, 2, 1, PadMode::kReflect), (V{0, 0, 0, 0}));
}

TEST(PadTest, FillIsTruncatedAndClampedAsPilDoes) {
  const std::vector<double> one{7.9}, three{300.7, -2.0, 3.9};
  const Fill a = fill_from(one), b = fill_from(three);
  EXPECT_EQ(std::tuple(a.rgb[0], a.rgb[1], a.rgb[2]), std::tuple(7, 7, 7));
  EXPECT_EQ(std::tuple(b.rgb[0], b.rgb[1], b.rgb[2]), std::tuple(255, 0, 3));
}

RgbImage gradient(int w, int h) {
  RgbImage im;
  im.width = w, im.height = h;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) im.pixels.insert(im.pixels.end(), {uint8_t(x), uint8_t(y), uint8_t(x * y)});
  return im;
}

TEST(CropTest, CenterCropBoxesFollowTorchvision) {
  auto box = [](int iw, int ih, int w, int h) {
    const CropBox b = center_crop_box(iw, ih, w, h);
    return std::tuple(b.left, b.top, b.width, b.height);
  };
  EXPECT_EQ(box(341, 256, 224, 224), std::tuple(58, 16, 224, 224));  // round(58.5) = 58, half to even
  EXPECT_EQ(box(343, 256, 224, 224), std::tuple(60, 16, 224, 224));  // round(59.5) = 60
  EXPECT_EQ(box(100, 50, 105, 50), std::tuple(-2, 0, 105, 50));     // padded: 2 before, 3 after
  EXPECT_EQ(box(100, 50, 90, 61), std::tuple(5, -5, 90, 61));
}

TEST(CropTest, OutsideTheImageIsZeroAndFlipSwapsRows) {
  const RgbImage src = gradient(5, 4);
  RgbImage out;
  crop_image(src, {-1, 2, 3, 3}, &out);
  ASSERT_EQ(out.pixels.size(), 27u);
  EXPECT_EQ(std::vector<uint8_t>(out.pixels.begin(), out.pixels.begin() + 9), (std::vector<uint8_t>{0, 0, 0, 0, 2, 0, 1, 2, 2}));
  EXPECT_EQ(std::vector<uint8_t>(out.pixels.begin() + 18, out.pixels.end()), std::vector<uint8_t>(9, 0));  // row 4
  RgbImage flipped = src;
  flip_vertical(&flipped);
  for (int y = 0; y < 4; ++y) EXPECT_EQ(flipped.row(y)[1], 3 - y);
}

TEST(ResizeTest, OutputSizesFollowTorchvision) {
  const std::vector<int> s256{256}, s224x300{224, 300}, s200{200};
  EXPECT_EQ(resized_output_size(500, 375, s256), (Size2{341, 256}));
  EXPECT_EQ(resized_output_size(375, 500, s256), (Size2{256, 341}));
  EXPECT_EQ(resized_output_size(500, 375, s224x300), (Size2{300, 224}));
  EXPECT_EQ(resized_output_size(1000, 100, s200, 1000), (Size2{1000, 100}));  // int(1000 * 200 / 2000)
  EXPECT_EQ(resized_output_size(1000, 900, s200, 201), (Size2{201, 181}));
}

// RandomCrop's padding then pad_if_needed, composed as maps, equals two F.pad calls in a row (reflect: a second
// reflection of a padded image is not one longer reflection) and a crop of the result.
TEST(RandomCropTest, ComposedPaddingsEqualPaddingTwice) {
  const RgbImage src = gradient(7, 5);
  for (PadMode mode : {PadMode::kConstant, PadMode::kEdge, PadMode::kReflect, PadMode::kSymmetric}) {
    RandomCropParams p;
    p.width = 20, p.height = 9, p.padding = Padding{2, 1, 3, 0}, p.pad_if_needed = true, p.mode = mode;
    p.fill.rgb[0] = 200;
    RgbImage once, twice, expect, ours;
    pad_image(src, *p.padding, mode, p.fill, &once);            // 12 x 6
    pad_image(once, {8, 3, 8, 3}, mode, p.fill, &twice);        // pad_if_needed: [20 - 12, 0], then [0, 9 - 6]
    ASSERT_EQ(std::tuple(twice.width, twice.height), std::tuple(28, 12));
    const PaddedSize padded = random_crop_padded_size(src.width, src.height, p);
    EXPECT_EQ(std::tuple(padded.width, padded.height), std::tuple(28, 12));
    SampleRng rng(3, 0, 1), same(3, 0, 1);
    ASSERT_TRUE(random_crop(src, p, rng, &ours).ok());
    const CropBox box = *random_crop_window(padded, p, same);
    crop_image(twice, box, &expect);
    EXPECT_EQ(ours.pixels, expect.pixels) << static_cast<int>(mode);
  }
}

TEST(RandomCropTest, DrawsTopThenLeftAndNothingWhenTheSizesMatch) {
  RandomCropParams p;
  p.width = 10, p.height = 10;
  SampleRng rng(1, 2, 3), copy(1, 2, 3);
  const CropBox exact = *random_crop_window({10, 10}, p, rng);
  EXPECT_EQ(std::tuple(exact.left, exact.top), std::tuple(0, 0));
  EXPECT_EQ(rng.next(), copy.next()) << "no draw when the image is the crop's size";
  SampleRng a(5, 0, 0), b(5, 0, 0);
  const CropBox box = *random_crop_window({30, 20}, p, a);
  const int top = static_cast<int>(b.randint(0, 10)), left = static_cast<int>(b.randint(0, 20));
  EXPECT_EQ(std::tuple(box.top, box.left), std::tuple(top, left));
}

TEST(RandomCropTest, CropLargerThanThePaddedImageIsAnError) {
  RandomCropParams p;
  p.width = 10, p.height = 30;
  SampleRng rng(1, 0, 0);
  const Result<CropBox> r = random_crop_window(random_crop_padded_size(40, 20, p), p, rng);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("crop size 30x10 is larger than the (padded) image 20x40"), std::string::npos)
      << r.error().message();
  p.pad_if_needed = true;
  EXPECT_TRUE(random_crop_window(random_crop_padded_size(40, 20, p), p, rng).ok());
}

}  // namespace
}  // namespace batchd::daemon::geometry
