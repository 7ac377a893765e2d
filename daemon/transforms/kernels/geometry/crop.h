// crop.h — torchvision 0.14's crops and vertical flip of PIL images (functional.py crop / center_crop,
// functional_pil.py crop / vflip), exact. Images are HWC uint8 RGB; `dst` buffers are reused (no allocation once
// grown); src and dst must differ.
#pragma once

#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon::geometry {

// PIL's img.crop((left, top, left + width, top + height)) (F.crop(img, top, left, height, width)): the box may
// reach past the image, whose outside reads as 0, as PIL's crop fills it. width, height >= 1.
void crop_image(const RgbImage& src, const CropBox& box, RgbImage* dst);

// The box F.center_crop(img, [height, width]) takes from an image of image_width x image_height, in the image's
// coordinates: left = int(round((image_width - width) / 2.0)) (Python's half-to-even), likewise top; where the
// crop is larger than the image, torchvision first pads that axis with 0 by (crop - image) // 2 before and
// (crop - image + 1) // 2 after, so the box starts at -((crop - image) // 2) and the padding is crop_image's 0s.
CropBox center_crop_box(int image_width, int image_height, int width, int height);

// F.center_crop(img, [height, width]) for a PIL image.
void center_crop(const RgbImage& src, int width, int height, RgbImage* dst);

// F.vflip (PIL's FLIP_TOP_BOTTOM), in place: rows swapped, no buffer.
void flip_vertical(RgbImage* image);

}  // namespace batchd::daemon::geometry
