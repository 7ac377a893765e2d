// The vision pipelines through their real code path (make_pipeline over a real imagefolder dataset)
// against the same transforms computed from whole-image decodes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "data/imagefolder_dataset.h"
#include "transforms/kernels/resample.h"
#include "transforms/presets/presets.h"
#include "transforms/kernels/vision_transforms.h"

#include "image_test_support.h"

namespace batchd::daemon {
namespace {

using namespace batchd::daemon::image_test;  // NOLINT

// train224_u8 / val224 (fast decode) through the real pipeline — region decode, origins, flip, CHW — equal the same
// transforms computed from a whole-image decode, bit for bit.
TEST(VisionPipelineTest, RegionDecodedBatchesEqualWholeImageComputation) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  auto dataset = ImageFolderDataset::open("photos", scratch().dir + "/photos");
  ASSERT_TRUE(dataset.ok()) << dataset.error().message();
  const int c = 224, n = 12;
  auto dec = std::move(ImageDecoder::create().value());
  for (VisionMode mode : {VisionMode::kTrain, VisionMode::kVal}) {
    auto pipeline = make_pipeline(mode == VisionMode::kTrain ? "train224_u8" : "val224_u8", *dataset);
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().message();
    const size_t plane = size_t{c} * c;
    std::vector<char> slot(n * 3 * plane + 4096);
    const std::vector<uint64_t> offsets = {0, n * 3 * plane};
    std::vector<int64_t> indices(n);
    for (int i = 0; i < n; ++i) indices[i] = (i * 7) % static_cast<int>((*dataset)->size());
    const BatchContext context{11, 3, {}};
    ASSERT_TRUE((*pipeline)->run(indices, slot.data(), offsets, context).ok());
    for (int i = 0; i < n; ++i) {
      SCOPED_TRACE(args(mode == VisionMode::kTrain ? "train" : "val", (*dataset)->path(indices[i])));
      const std::vector<uint8_t> bytes = slurp((*dataset)->path(indices[i]));
      const ImageHeader h = dec->header(bytes, "x").value();
      std::vector<uint8_t> hwc(plane * 3), scratch_buf;
      RgbImage whole;
      bool flip = false;
      if (mode == VisionMode::kTrain) {
        SampleRng rng(context.seed, context.epoch, indices[i]);
        const CropBox box = random_resized_crop_params(h.width, h.height, rng);
        flip = rng.uniform(0.0, 1.0) < 0.5;
        const Scale s = dec->choose_scale(h, box.width, box.height, c, c);
        ASSERT_TRUE(dec->decode(bytes, "x", h, s, &whole, true).ok());
        const double sx = double(whole.width) / h.width, sy = double(whole.height) / h.height;
        const double x0 = box.left * sx, x1 = (box.left + box.width) * sx;
        const double y0 = box.top * sy, y1 = (box.top + box.height) * sy;
        const int rx = int(std::floor(x0)), ry = int(std::floor(y0));
        const int rw = std::min(whole.width, int(std::ceil(x1))) - rx;
        const int rh = std::min(whole.height, int(std::ceil(y1))) - ry;
        resample_bilinear(whole, rx, ry, {rw, x0 - rx, std::min(x1 - rx, double(rw)), c, 0, c},
                          {rh, y0 - ry, std::min(y1 - ry, double(rh)), c, 0, c}, hwc.data(), &scratch_buf,
                          ResampleOrder::kFast);
      } else {
        int nw = 0, nh = 0;
        resize_shorter_side(h.width, h.height, 256, &nw, &nh);
        ASSERT_TRUE(dec->decode(bytes, "x", h, dec->choose_scale(h, h.width, h.height, nw, nh), &whole, true).ok());
        resample_bilinear(whole, 0, 0, {whole.width, 0.0, double(whole.width), nw, center_crop_offset(nw, c), c},
                          {whole.height, 0.0, double(whole.height), nh, center_crop_offset(nh, c), c}, hwc.data(),
                          &scratch_buf, ResampleOrder::kFast);
      }
      const auto* got = reinterpret_cast<const uint8_t*>(slot.data()) + i * 3 * plane;
      int mismatches = 0;
      for (int ch = 0; ch < 3; ++ch) {
        for (int y = 0; y < c; ++y) {
          for (int x = 0; x < c; ++x) {
            const int sxp = flip ? c - 1 - x : x;
            mismatches += got[ch * plane + y * c + x] != hwc[(size_t(y) * c + sxp) * 3 + ch];
          }
        }
      }
      EXPECT_EQ(mismatches, 0);
      EXPECT_EQ(reinterpret_cast<const int64_t*>(slot.data() + offsets[1])[i], (*dataset)->label(indices[i]));
    }
  }
}


}  // namespace
}  // namespace batchd::daemon
