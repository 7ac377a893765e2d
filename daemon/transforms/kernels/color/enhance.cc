// ImageEnhance's four enhancers and the L conversion (color.h; Pillow 9.4 ImageEnhance.py, Blend.c, Convert.c,
// Filter.c, ImageStat.py).
#include <cstddef>
#include <cstdint>

#include "transforms/kernels/color/blend_simd.h"
#include "transforms/kernels/color/color.h"
#include "transforms/kernels/color/pil_pixel.h"

namespace batchd::daemon {
namespace {

size_t pixel_count(const RgbImage& img) { return static_cast<size_t>(img.width) * img.height; }

// Filter.c ImagingFilter3x3 with ImageFilter.SMOOTH: kernel (1 1 1 / 1 5 1 / 1 1 1), each weight divided by the
// scale 13 in float (_imaging.c _filter), offset 0 + 0.5, each row's three products summed left to right, rows
// added in the order y+1, y, y-1, then truncated (clip8). Border rows and columns are copied; an image smaller
// than 3x3 is copied whole.
void smooth(const RgbImage& src, RgbImage& dst) {
  dst.width = src.width;
  dst.height = src.height;
  dst.pixels.assign(src.pixels.begin(), src.pixels.end());
  if (src.width < 3 || src.height < 3) return;
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  const size_t stride = static_cast<size_t>(src.width) * 3;
  for (int y = 1; y < src.height - 1; ++y) {
    const uint8_t* up = src.row(y - 1);
    const uint8_t* mid = src.row(y);
    const uint8_t* down = src.row(y + 1);
    uint8_t* out = dst.pixels.data() + static_cast<size_t>(y) * stride;
    for (size_t i = 3; i < stride - 3; ++i) {
      float ss = 0.5f;
      ss += static_cast<float>(down[i - 3]) * k1 + static_cast<float>(down[i]) * k1 +
            static_cast<float>(down[i + 3]) * k1;
      ss += static_cast<float>(mid[i - 3]) * k1 + static_cast<float>(mid[i]) * k5 + static_cast<float>(mid[i + 3]) * k1;
      ss += static_cast<float>(up[i - 3]) * k1 + static_cast<float>(up[i]) * k1 + static_cast<float>(up[i + 3]) * k1;
      out[i] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : static_cast<uint8_t>(ss);
    }
  }
}

}  // namespace

// The blends run on SIMD vectors (blend_simd.h), with pil::Blend's arithmetic per lane.
void adjust_brightness(RgbImage& img, double factor) {
  if (!pil::Blend(factor).is_identity()) blend_image(img, static_cast<float>(factor), 0);
}

void adjust_contrast(RgbImage& img, double factor) {
  if (pil::Blend(factor).is_identity()) return;
  // ImageStat.Stat(img.convert("L")).mean: sum(i * h[i]) / count (a Python float; the sum is exact in a double).
  const size_t n = pixel_count(img);
  const double mean = n == 0 ? 0.0 : static_cast<double>(luma_sum(img)) / static_cast<double>(n);
  blend_image(img, static_cast<float>(factor), static_cast<int>(mean + 0.5));
}

void adjust_saturation(RgbImage& img, double factor) {
  if (!pil::Blend(factor).is_identity()) blend_image(img, static_cast<float>(factor), kPerPixelLuma);
}

void adjust_sharpness(RgbImage& img, double factor, RgbImage* scratch) {
  const pil::Blend blend(factor);
  if (blend.is_identity()) return;
  smooth(img, *scratch);
  const uint8_t* d = scratch->pixels.data();
  for (uint8_t& v : img.pixels) v = blend(*d++, v);
}

void to_grayscale(RgbImage& img) {
  uint8_t* p = img.pixels.data();
  const size_t n = pixel_count(img);
  for (size_t i = 0; i < n; ++i, p += 3) p[0] = p[1] = p[2] = pil::luma(p[0], p[1], p[2]);
}

}  // namespace batchd::daemon
