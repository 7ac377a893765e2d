// resample.h — PIL-compatible bilinear resampling of 8-bit RGB images (what torchvision's Resize and
// RandomResizedCrop do to PIL images: Image.resize(size, Image.BILINEAR), which antialiases when downscaling).
//
// The algorithm is Pillow's ImagingResample (src/libImaging/Resample.c, Pillow 9.x): separable, horizontal pass
// then vertical pass; for each output pixel the triangle filter is stretched by max(scale, 1) so that downscaling
// averages every input pixel it covers; weights are normalized per output pixel and applied in fixed point with
// 22 fractional bits, rounding to nearest and clamping to [0, 255]. With the same input, output equals Pillow's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace batchd::daemon {

// An 8-bit RGB image, rows of width*3 bytes (HWC).
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;
  const uint8_t* row(int y) const { return pixels.data() + static_cast<size_t>(y) * width * 3; }
};

// One axis of a resampling: the source extent [0, in_size), the box [box0, box1) of it that maps onto a virtual
// output of `out_size` pixels, and the window [out_begin, out_begin + out_count) of that output actually computed
// (a center crop computes only its window). box0/box1 may be fractional.
struct ResampleAxis {
  int in_size;
  double box0, box1;
  int out_size;
  int out_begin, out_count;
};

// Per-axis filter taps, computed once per image.
struct ResampleCoeffs {
  std::vector<int> bounds;   // (first input index, tap count) per output pixel
  std::vector<int32_t> taps; // ksize taps per output pixel, fixed point
  int ksize = 0;
};
ResampleCoeffs resample_coeffs(const ResampleAxis& axis);

// The input pixels [first, last) of an axis that its computed window reads (at least every tap with a weight).
std::pair<int, int> resample_input_range(const ResampleAxis& axis);

// kPillow: horizontal pass then vertical, exactly Pillow's output. kFast: vertical pass first, over only the
// columns needed (less work when rows shrink most), within one level of Pillow's output.
enum class ResampleOrder { kPillow, kFast };

// Resamples `src` (its sub-rectangle starting at (x_origin, y_origin) is the source extent of both axes; an origin
// may be negative when `src` holds only the part of the extent that resample_input_range() says is read) into
// `dst_rgb` (out_count_x * out_count_y * 3 bytes, HWC). `scratch` is reused between calls.
void resample_bilinear(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& x, const ResampleAxis& y,
                       uint8_t* dst_rgb, std::vector<uint8_t>* scratch,
                       ResampleOrder order = ResampleOrder::kPillow);

}  // namespace batchd::daemon
