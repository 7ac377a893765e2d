#include "resample.h"

#include <algorithm>
#include <cmath>

namespace batchd::daemon {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

double bilinear_filter(double x) {
  if (x < 0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

inline uint8_t clip8(int32_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

}  // namespace

ResampleCoeffs resample_coeffs(const ResampleAxis& a) {
  const double scale = (a.box1 - a.box0) / a.out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the bilinear filter's support is 1
  ResampleCoeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(a.out_count) * 2);
  c.taps.assign(static_cast<size_t>(a.out_count) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int i = 0; i < a.out_count; ++i) {
    const int xx = a.out_begin + i;
    const double center = a.box0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > a.in_size) xmax = a.in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = bilinear_filter((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? k[x] / ww : k[x];
      c.taps[static_cast<size_t>(i) * c.ksize + x] =
          static_cast<int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[2 * i] = xmin;
    c.bounds[2 * i + 1] = xmax;
  }
  return c;
}

void resample_bilinear(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& xa,
                       const ResampleAxis& ya, uint8_t* dst, std::vector<uint8_t>* scratch) {
  const ResampleCoeffs cx = resample_coeffs(xa);
  const ResampleCoeffs cy = resample_coeffs(ya);
  // Rows of the source the vertical pass will read.
  int y_first = ya.in_size, y_last = 0;
  for (int i = 0; i < ya.out_count; ++i) {
    y_first = std::min(y_first, cy.bounds[2 * i]);
    y_last = std::max(y_last, cy.bounds[2 * i] + cy.bounds[2 * i + 1]);
  }
  if (y_last <= y_first) y_first = y_last = 0;
  const int rows = y_last - y_first;
  const int out_w = xa.out_count;
  scratch->resize(static_cast<size_t>(rows) * out_w * 3);

  // Horizontal pass: rows [y_first, y_last) of the source extent -> scratch (rows x out_w). The three channels of
  // a pixel are accumulated as one 4-lane vector (GCC/Clang vector extensions: SSE2 on x86-64, NEON on arm64);
  // the fourth lane reads the next byte and is discarded, so the last pixel of a row is handled separately.
  typedef int32_t v4si __attribute__((vector_size(16)));
  for (int r = 0; r < rows; ++r) {
    const uint8_t* in = src.row(y_origin + y_first + r) + static_cast<size_t>(x_origin) * 3;
    uint8_t* out = scratch->data() + static_cast<size_t>(r) * out_w * 3;
    const int last_x = xa.in_size - 1;  // pixel whose 4-byte load would run past the row's extent
    for (int i = 0; i < out_w; ++i) {
      const int xmin = cx.bounds[2 * i], n = cx.bounds[2 * i + 1];
      const int32_t* k = cx.taps.data() + static_cast<size_t>(i) * cx.ksize;
      const uint8_t* p = in + static_cast<size_t>(xmin) * 3;
      v4si acc = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 0};
      const int vec_taps = xmin + n - 1 >= last_x ? n - 1 : n;
      int t = 0;
      for (; t < vec_taps; ++t, p += 3) {
        const v4si px = {p[0], p[1], p[2], p[3]};
        acc += px * k[t];
      }
      for (; t < n; ++t, p += 3) {
        const v4si px = {p[0], p[1], p[2], 0};
        acc += px * k[t];
      }
      out[3 * i] = clip8(acc[0]);
      out[3 * i + 1] = clip8(acc[1]);
      out[3 * i + 2] = clip8(acc[2]);
    }
  }
  // Vertical pass: scratch -> dst (out_count_y rows).
  const size_t stride = static_cast<size_t>(out_w) * 3;
  std::vector<int32_t> acc(stride);
  for (int j = 0; j < ya.out_count; ++j) {
    const int ymin = cy.bounds[2 * j] - y_first, n = cy.bounds[2 * j + 1];
    const int32_t* k = cy.taps.data() + static_cast<size_t>(j) * cy.ksize;
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int t = 0; t < n; ++t) {
      const uint8_t* in = scratch->data() + static_cast<size_t>(ymin + t) * stride;
      const int32_t w = k[t];
      for (size_t x = 0; x < stride; ++x) acc[x] += in[x] * w;
    }
    uint8_t* out = dst + static_cast<size_t>(j) * stride;
    for (size_t x = 0; x < stride; ++x) out[x] = clip8(acc[x]);
  }
}

}  // namespace batchd::daemon
