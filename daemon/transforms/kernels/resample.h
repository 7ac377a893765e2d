// resample.h — PIL-compatible resampling of 8-bit RGB images: what Image.resize(size, filter, box) does, and so what
// torchvision's Resize, RandomResizedCrop and CenterCrop-after-Resize do to PIL images, for the filters NEAREST,
// BILINEAR and BICUBIC.
//
// BILINEAR and BICUBIC are Pillow's ImagingResample (src/libImaging/Resample.c, Pillow 13): separable, horizontal
// pass then vertical pass, or vertical first when that pass shrinks the image by more than twice as many pixels
// (2 * (in_w - out_w) < in_h - out_h; Pillow 9.x always ran horizontal first); for each output pixel the filter
// (triangle of support 1; Keys' cubic with a = -0.5, support 2) is stretched by max(scale, 1) so that downscaling
// averages every input pixel it covers (antialiasing: PIL always does it); weights are normalized per output pixel
// and applied in fixed point with 22 fractional bits, rounding to nearest and clamping each pass to [0, 255]. With
// the same input, output equals Pillow's. The passes run vectorized (resample_passes.h: Highway, the same integer
// arithmetic).
// NEAREST is not a convolution in Pillow: Image.resize takes it to ImagingScaleAffine (src/_imaging.c _resize,
// src/libImaging/Geometry.c): source x of output column i is (int)(box0 + scale / 2 + scale + ... + scale), the
// position accumulated by repeated addition in double, as Pillow does; likewise for rows.
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
// (a center crop computes only its window). box0/box1 may be fractional (pillow_axis() makes them as Pillow does).
struct ResampleAxis {
  int in_size;
  double box0, box1;
  int out_size;
  int out_begin, out_count;
};

// PIL's Image.NEAREST, BILINEAR, BICUBIC (torchvision's InterpolationMode of the same names).
enum class ResampleFilter { kNearest, kBilinear, kBicubic };

// The axis of Image.resize(..., box=(.., box0, .., box1)) for an input of `in_size` and an output of `out_size`:
// Pillow takes the box as C floats and the box's extent as their float difference (box1 - box0 rounded to float);
// this axis gives resample_coeffs() that extent exactly (box0 + the float difference is exact in double for
// coordinates below 2^24). A whole-image resize is pillow_axis(in, 0, in, out).
ResampleAxis pillow_axis(int in_size, float box0, float box1, int out_size);

// Per-axis filter taps (bilinear, bicubic), computed once per image.
struct ResampleCoeffs {
  std::vector<int> bounds;   // (first input index, tap count) per output pixel
  std::vector<int32_t> taps; // ksize taps per output pixel, fixed point
  int ksize = 0;
};
ResampleCoeffs resample_coeffs(const ResampleAxis& axis, ResampleFilter filter = ResampleFilter::kBilinear);
void resample_coeffs(const ResampleAxis& axis, ResampleFilter filter, ResampleCoeffs* out);  // reuses out's buffers

// The input pixels [first, last) of an axis that its computed window reads (at least every tap with a weight; for
// kNearest, every pixel sampled).
std::pair<int, int> resample_input_range(const ResampleAxis& axis, ResampleFilter filter = ResampleFilter::kBilinear);

// kPillow: Pillow's order (see above), exactly Pillow's output. kFast: vertical pass first, over only the columns
// needed (less work when rows shrink most), within one level of Pillow's output for kBilinear. kBicubic always runs
// kPillow's order: its negative lobes make the other order's rounding and clamping differ by up to 3 levels
// (measured on photographs). kNearest has one order.
enum class ResampleOrder { kPillow, kFast };

// Resamples `src` (its sub-rectangle starting at (x_origin, y_origin) is the source extent of both axes; an origin
// may be negative when `src` holds only the part of the extent that resample_input_range() says is read) into
// `dst_rgb` (out_count_x * out_count_y * 3 bytes, HWC) with `filter`. `scratch` is reused between calls, and so
// are the coefficient tables (per thread): no allocation once they have grown. Preconditions (unchecked): every axis has 0 <= box0 < box1 <=
// in_size, out_size >= 1 and its window inside [0, out_size); the extent lies inside `src`.
void resample(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& x, const ResampleAxis& y,
              ResampleFilter filter, uint8_t* dst_rgb, std::vector<uint8_t>* scratch,
              ResampleOrder order = ResampleOrder::kPillow);

inline void resample_bilinear(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& x,
                              const ResampleAxis& y, uint8_t* dst_rgb, std::vector<uint8_t>* scratch,
                              ResampleOrder order = ResampleOrder::kPillow) {
  resample(src, x_origin, y_origin, x, y, ResampleFilter::kBilinear, dst_rgb, scratch, order);
}

// Pillow's NEAREST (see above) of the same arguments; resample() calls it for kNearest. Pixels whose source
// position falls outside the extent are 0, as Pillow's fill (only for a box the caller let reach past it).
void resample_nearest(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& x, const ResampleAxis& y,
                      uint8_t* dst_rgb);
std::pair<int, int> nearest_input_range(const ResampleAxis& axis);

}  // namespace batchd::daemon
