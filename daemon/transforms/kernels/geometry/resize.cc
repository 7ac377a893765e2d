#include "transforms/kernels/geometry/resize.h"

#include <cstring>

namespace batchd::daemon::geometry {

namespace {

void shape(RgbImage* image, int width, int height) {
  image->width = width;
  image->height = height;
  image->pixels.resize(static_cast<size_t>(width) * height * 3);
}

}  // namespace

bool parse_filter(std::string_view name, ResampleFilter* filter) {
  if (name == "nearest") *filter = ResampleFilter::kNearest;
  else if (name == "bilinear") *filter = ResampleFilter::kBilinear;
  else if (name == "bicubic") *filter = ResampleFilter::kBicubic;
  else return false;
  return true;
}

Size2 resized_output_size(int width, int height, std::span<const int> size, int max_size) {
  if (size.size() == 2) return {size[1], size[0]};
  const bool portrait = width <= height;
  const int64_t shorter = portrait ? width : height, longer = portrait ? height : width;
  // int(a * b / c) in Python floats equals integer division here: a * b / c is at least 1 / c away from the
  // next integer above it, far more than a double's rounding error for sides below 2^20.
  int64_t new_short = size[0], new_long = new_short * longer / shorter;
  if (max_size > 0 && new_long > max_size) {
    new_short = max_size * new_short / new_long;
    new_long = max_size;
  }
  return portrait ? Size2{static_cast<int>(new_short), static_cast<int>(new_long)}
                  : Size2{static_cast<int>(new_long), static_cast<int>(new_short)};
}

void resize_box(const RgbImage& src, const float box[4], int width, int height, ResampleFilter filter, RgbImage* dst,
                std::vector<uint8_t>* scratch) {
  shape(dst, width, height);
  resample(src, 0, 0, pillow_axis(src.width, box[0], box[2], width), pillow_axis(src.height, box[1], box[3], height),
           filter, dst->pixels.data(), scratch);
}

void resize_image(const RgbImage& src, int width, int height, ResampleFilter filter, RgbImage* dst,
                  std::vector<uint8_t>* scratch) {
  const float box[4] = {0.0f, 0.0f, static_cast<float>(src.width), static_cast<float>(src.height)};
  resize_box(src, box, width, height, filter, dst, scratch);
}

void resize(const RgbImage& src, std::span<const int> size, int max_size, ResampleFilter filter, RgbImage* dst,
            std::vector<uint8_t>* scratch) {
  const Size2 out = resized_output_size(src.width, src.height, size, max_size);
  if (out == Size2{src.width, src.height}) {
    shape(dst, src.width, src.height);
    std::memcpy(dst->pixels.data(), src.pixels.data(), src.pixels.size());
    return;
  }
  resize_image(src, out.width, out.height, filter, dst, scratch);
}

void resized_crop(const RgbImage& src, const CropBox& box, int out_width, int out_height, ResampleFilter filter,
                  RgbImage* dst, std::vector<uint8_t>* scratch) {
  shape(dst, out_width, out_height);
  resample(src, box.left, box.top, pillow_axis(box.width, 0.0f, static_cast<float>(box.width), out_width),
           pillow_axis(box.height, 0.0f, static_cast<float>(box.height), out_height), filter, dst->pixels.data(),
           scratch);
}

void random_resized_crop(const RgbImage& src, int out_width, int out_height, const double scale[2],
                         const double ratio[2], ResampleFilter filter, SampleRng& rng, RgbImage* dst,
                         std::vector<uint8_t>* scratch) {
  const CropBox box = random_resized_crop_params(src.width, src.height, rng, scale[0], scale[1], ratio[0], ratio[1]);
  resized_crop(src, box, out_width, out_height, filter, dst, scratch);
}

}  // namespace batchd::daemon::geometry
