#include "transforms/kernels/geometry/crop.h"

#include <algorithm>
#include <cstring>

namespace batchd::daemon::geometry {

void crop_image(const RgbImage& src, const CropBox& box, RgbImage* dst) {
  dst->width = box.width;
  dst->height = box.height;
  dst->pixels.resize(static_cast<size_t>(box.width) * box.height * 3);
  // The columns of the box inside the image: [x0, x1) in src; the rest of each row is 0.
  const int x0 = std::clamp(box.left, 0, src.width), x1 = std::clamp(box.left + box.width, 0, src.width);
  const size_t row_bytes = static_cast<size_t>(box.width) * 3;
  for (int y = 0; y < box.height; ++y) {
    uint8_t* o = dst->pixels.data() + y * row_bytes;
    const int sy = box.top + y;
    if (sy < 0 || sy >= src.height || x1 <= x0) {
      std::memset(o, 0, row_bytes);
      continue;
    }
    const size_t before = static_cast<size_t>(x0 - box.left) * 3, inside = static_cast<size_t>(x1 - x0) * 3;
    std::memset(o, 0, before);
    std::memcpy(o + before, src.row(sy) + static_cast<size_t>(x0) * 3, inside);
    std::memset(o + before + inside, 0, row_bytes - before - inside);
  }
}

CropBox center_crop_box(int image_width, int image_height, int width, int height) {
  auto start = [](int image, int crop) { return crop > image ? -((crop - image) / 2) : center_crop_offset(image, crop); };
  return {start(image_width, width), start(image_height, height), width, height};
}

void center_crop(const RgbImage& src, int width, int height, RgbImage* dst) {
  crop_image(src, center_crop_box(src.width, src.height, width, height), dst);
}

void flip_vertical(RgbImage* image) {
  const size_t row_bytes = static_cast<size_t>(image->width) * 3;
  for (int top = 0, bottom = image->height - 1; top < bottom; ++top, --bottom) {
    std::swap_ranges(image->pixels.data() + top * row_bytes, image->pixels.data() + (top + 1) * row_bytes,
                     image->pixels.data() + bottom * row_bytes);
  }
}

}  // namespace batchd::daemon::geometry
