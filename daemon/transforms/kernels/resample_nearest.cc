// Pillow's NEAREST resize (resample.h): Image.resize(size, NEAREST, box) goes to ImagingScaleAffine
// (src/_imaging.c _resize; src/libImaging/Geometry.c), not to the convolution of Resample.c.
#include <cmath>
#include <cstring>
#include <vector>

#include "transforms/kernels/resample.h"

namespace batchd::daemon {

namespace {

// Source index (in the extent, or -1 / >= in_size outside it) of each output pixel of the axis' window, as
// ImagingScaleAffine computes it: a = (box1 - box0) / out_size; pos = box0 + a / 2, then pos += a per pixel
// (accumulated in double from pixel 0, so the window's indices equal the whole output's); COORD(pos) truncates,
// with any negative position mapping to -1.
void nearest_indices(const ResampleAxis& a, std::vector<int>* out) {
  const double step = (a.box1 - a.box0) / a.out_size;
  double pos = a.box0 + step * 0.5;
  for (int i = 0; i < a.out_begin; ++i) pos += step;
  out->resize(a.out_count);
  for (int i = 0; i < a.out_count; ++i, pos += step) (*out)[i] = pos < 0.0 ? -1 : static_cast<int>(pos);
}

}  // namespace

std::pair<int, int> nearest_input_range(const ResampleAxis& a) {
  thread_local std::vector<int> idx;
  nearest_indices(a, &idx);
  int first = a.in_size, last = 0;
  for (int v : idx) {
    if (v < 0 || v >= a.in_size) continue;
    first = std::min(first, v);
    last = std::max(last, v + 1);
  }
  return last <= first ? std::pair<int, int>{0, 0} : std::pair<int, int>{first, last};
}

void resample_nearest(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& xa, const ResampleAxis& ya,
                      uint8_t* dst) {
  thread_local std::vector<int> xs, ys;
  nearest_indices(xa, &xs);
  nearest_indices(ya, &ys);
  const size_t out_row = static_cast<size_t>(xa.out_count) * 3;
  for (int j = 0; j < ya.out_count; ++j) {
    uint8_t* o = dst + j * out_row;
    if (ys[j] < 0 || ys[j] >= ya.in_size) {
      std::memset(o, 0, out_row);
      continue;
    }
    const uint8_t* row = src.row(y_origin + ys[j]) + static_cast<ptrdiff_t>(x_origin) * 3;
    for (int i = 0; i < xa.out_count; ++i, o += 3) {
      const int x = xs[i];
      if (x < 0 || x >= xa.in_size) {
        o[0] = o[1] = o[2] = 0;
      } else {
        std::memcpy(o, row + x * 3, 3);
      }
    }
  }
}

}  // namespace batchd::daemon
