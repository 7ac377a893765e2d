// resize.h — torchvision 0.14's resizes of PIL images (functional.py resize / resized_crop, functional_pil.py
// resize), on RgbImage with Pillow's filters (resample.h): exact, as PIL computes them.
//
// Sizes are in pixels; images are HWC uint8 RGB. The functions write `dst` (its buffer is reused: no allocation
// once it has grown) and never read `dst` as input (src and dst must differ). `scratch` is the resampler's.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon::geometry {

// "nearest", "bilinear", "bicubic" (torchvision's InterpolationMode values); false for another word.
bool parse_filter(std::string_view name, ResampleFilter* filter);

struct Size2 {
  int width = 0, height = 0;
  bool operator==(const Size2&) const = default;
};

// torchvision's _compute_resized_output_size for an input of width x height: `size` of one value is the shorter
// side's new length (the longer one: int(size * long / short); with max_size > 0, if that exceeds max_size the
// longer side becomes max_size and the shorter int(max_size * size / long')); two values are [height, width].
// Preconditions (the op's plan checks them): every value >= 1; max_size > size[0] (torchvision's ValueError
// otherwise) and only with one value; 0 = no max_size.
Size2 resized_output_size(int width, int height, std::span<const int> size, int max_size = 0);

// PIL's image.resize((width, height), filter, box=(left, top, right, bottom)); box in source pixels as floats, as
// Pillow takes it (0 <= left < right <= src.width, likewise top/bottom). resize_image(): the whole image.
void resize_box(const RgbImage& src, const float box[4], int width, int height, ResampleFilter filter, RgbImage* dst,
                std::vector<uint8_t>* scratch);
void resize_image(const RgbImage& src, int width, int height, ResampleFilter filter, RgbImage* dst,
                  std::vector<uint8_t>* scratch);

// F.resize(img, size, interpolation, max_size) for a PIL image: resize to resized_output_size() (a copy when the
// size does not change, as torchvision returns the image itself). antialias is not a parameter: PIL always
// antialiases (torchvision 0.14 ignores antialias=False for PIL images, with a warning).
void resize(const RgbImage& src, std::span<const int> size, int max_size, ResampleFilter filter, RgbImage* dst,
            std::vector<uint8_t>* scratch);

// F.resized_crop(img, top, left, height, width, [out_height, out_width], interpolation) for a PIL image: crop `box`
// (inside src), then resize it to out_width x out_height. The crop is not copied: the resampler reads it in place
// with the crop's edges as the extent, as PIL's crop-then-resize has them.
void resized_crop(const RgbImage& src, const CropBox& box, int out_width, int out_height, ResampleFilter filter,
                  RgbImage* dst, std::vector<uint8_t>* scratch);

// RandomResizedCrop(size=[out_height, out_width], scale, ratio, interpolation)(img): draws the box with
// random_resized_crop_params (vision_transforms.h; torchvision's get_params and its draw order), then
// resized_crop().
void random_resized_crop(const RgbImage& src, int out_width, int out_height, const double scale[2],
                         const double ratio[2], ResampleFilter filter, SampleRng& rng, RgbImage* dst,
                         std::vector<uint8_t>* scratch);

}  // namespace batchd::daemon::geometry
