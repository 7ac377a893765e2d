// random_crop.h — torchvision 0.14's RandomCrop for PIL images (transforms.py RandomCrop.forward / get_params):
// pad by `padding` (if any), then, with pad_if_needed, pad the width by [size_w - width, 0] (left AND right by the
// difference, as torchvision does) and the height by [0, size_h - height], then crop a uniformly drawn
// size_h x size_w window: i = randint(0, H - size_h), j = randint(0, W - size_w), i drawn first; nothing is drawn
// when the padded image is exactly the crop's size.
//
// The paddings are composed as index maps (pad.h), so only the crop's window is ever written: no padded image is
// made. Not thread-safe (per-thread buffers); `dst` buffers reused; src and dst must differ.
#pragma once

#include <optional>

#include "batchd/result.h"
#include "transforms/kernels/geometry/pad.h"
#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon::geometry {

struct RandomCropParams {
  int width = 0, height = 0;          // the crop (torchvision's size = [height, width])
  std::optional<Padding> padding;     // None, or torchvision's padding (pad.h padding_from)
  bool pad_if_needed = false;
  Fill fill;                          // for PadMode::kConstant
  PadMode mode = PadMode::kConstant;  // padding_mode, for both paddings
};

// The size of an image of width x height after RandomCrop's paddings.
struct PaddedSize {
  int width = 0, height = 0;
};
PaddedSize random_crop_padded_size(int width, int height, const RandomCropParams& params);

// The window drawn from a padded image of `padded` size (top-left in the padded image's coordinates).
// kInvalidArgument, as torchvision's ValueError, when the crop is larger than the padded image: "crop size
// HxW is larger than the (padded) image HxW: ...". Draws nothing on an error.
Result<CropBox> random_crop_window(const PaddedSize& padded, const RandomCropParams& params, SampleRng& rng);

// RandomCrop(size, padding, pad_if_needed, fill, padding_mode)(img). Errors: random_crop_window's.
Status random_crop(const RgbImage& src, const RandomCropParams& params, SampleRng& rng, RgbImage* dst);

}  // namespace batchd::daemon::geometry
