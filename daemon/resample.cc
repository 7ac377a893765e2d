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

namespace {

// One horizontal pass: `rows` rows of `in` (pixel 0 of row r at in + r * in_stride) -> out (rows x out_w pixels).
// The three channels of a pixel are accumulated as one 4-lane vector (GCC/Clang vector extensions); the fourth lane
// reads the next byte and is discarded, so a tap on the extent's last pixel (`last_x`) is read 3 bytes at a time.
inline void horizontal_pass(const uint8_t* in, size_t in_stride, int rows, const ResampleCoeffs& cx, int x_shift,
                            int out_w, int last_x, uint8_t* out) {
  typedef int32_t v4si __attribute__((vector_size(16)));
  typedef uint8_t v4qu __attribute__((vector_size(4)));
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = in + static_cast<size_t>(r) * in_stride;
    uint8_t* o = out + static_cast<size_t>(r) * out_w * 3;
    for (int i = 0; i < out_w; ++i) {
      const int xmin = cx.bounds[2 * i] - x_shift, n = cx.bounds[2 * i + 1];
      const int32_t* k = cx.taps.data() + static_cast<size_t>(i) * cx.ksize;
      const uint8_t* p = row + static_cast<size_t>(xmin) * 3;
      v4si acc = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 0};
      const int vec_taps = xmin + n - 1 >= last_x ? n - 1 : n;
      int t = 0;
      for (; t < vec_taps; ++t, p += 3) {
        v4qu bytes;
        __builtin_memcpy(&bytes, p, 4);
        acc += __builtin_convertvector(bytes, v4si) * k[t];
      }
      for (; t < n; ++t, p += 3) {
        const v4si px = {p[0], p[1], p[2], 0};
        acc += px * k[t];
      }
      o[3 * i] = clip8(acc[0]);
      o[3 * i + 1] = clip8(acc[1]);
      o[3 * i + 2] = clip8(acc[2]);
    }
  }
}

// One vertical pass: for each output row j, the taps of cy over rows (bounds - y_shift) of `in` (row stride
// in_stride), `width_bytes` bytes wide -> out (row stride width_bytes).
inline void vertical_pass(const uint8_t* in, size_t in_stride, size_t width_bytes, const ResampleCoeffs& cy,
                          int y_shift, int out_rows, uint8_t* out, std::vector<int32_t>* acc) {
  acc->resize(width_bytes);
  int32_t* a = acc->data();
  for (int j = 0; j < out_rows; ++j) {
    const int ymin = cy.bounds[2 * j] - y_shift, n = cy.bounds[2 * j + 1];
    const int32_t* k = cy.taps.data() + static_cast<size_t>(j) * cy.ksize;
    for (size_t x = 0; x < width_bytes; ++x) a[x] = 1 << (kPrecisionBits - 1);
    for (int t = 0; t < n; ++t) {
      const uint8_t* row = in + static_cast<size_t>(ymin + t) * in_stride;
      const int32_t w = k[t];
      for (size_t x = 0; x < width_bytes; ++x) a[x] += row[x] * w;
    }
    uint8_t* o = out + static_cast<size_t>(j) * width_bytes;
    for (size_t x = 0; x < width_bytes; ++x) o[x] = clip8(a[x]);
  }
}

// The [first, last) input range an axis reads.
std::pair<int, int> input_range(const ResampleCoeffs& c, int count, int in_size) {
  int first = in_size, last = 0;
  for (int i = 0; i < count; ++i) {
    first = std::min(first, c.bounds[2 * i]);
    last = std::max(last, c.bounds[2 * i] + c.bounds[2 * i + 1]);
  }
  return last <= first ? std::pair<int, int>{0, 0} : std::pair<int, int>{first, last};
}

}  // namespace

// Built for AVX2 and for baseline x86-64; the loader picks the best at run time (GCC target_clones).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void resample_bilinear(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& xa,
                       const ResampleAxis& ya, uint8_t* dst, std::vector<uint8_t>* scratch, ResampleOrder order) {
  const ResampleCoeffs cx = resample_coeffs(xa);
  const ResampleCoeffs cy = resample_coeffs(ya);
  const auto [y_first, y_last] = input_range(cy, ya.out_count, ya.in_size);
  const auto [x_first, x_last] = input_range(cx, xa.out_count, xa.in_size);
  const size_t src_stride = static_cast<size_t>(src.width) * 3;
  const int out_w = xa.out_count;
  thread_local std::vector<int32_t> acc;
  if (order == ResampleOrder::kPillow) {
    // Pillow: horizontal over the rows the vertical pass will read, then vertical.
    const int rows = y_last - y_first;
    scratch->resize(static_cast<size_t>(rows) * out_w * 3);
    horizontal_pass(src.row(y_origin + y_first) + static_cast<size_t>(x_origin) * 3, src_stride, rows, cx, 0, out_w,
                    xa.in_size - 1, scratch->data());
    vertical_pass(scratch->data(), static_cast<size_t>(out_w) * 3, static_cast<size_t>(out_w) * 3, cy, y_first,
                  ya.out_count, dst, &acc);
  } else {
    // Vertical first, over only the columns the horizontal pass will read: when the image shrinks more in height
    // than in width this does far less work; results differ from Pillow's by at most one level (rounding order).
    const int cols = x_last - x_first;
    scratch->resize(static_cast<size_t>(ya.out_count) * cols * 3 + 4);
    vertical_pass(src.row(y_origin) + static_cast<size_t>(x_origin + x_first) * 3, src_stride,
                  static_cast<size_t>(cols) * 3, cy, 0, ya.out_count, scratch->data(), &acc);
    horizontal_pass(scratch->data(), static_cast<size_t>(cols) * 3, ya.out_count, cx, x_first, out_w, 1 << 30,
                    dst);
  }
}

}  // namespace batchd::daemon
