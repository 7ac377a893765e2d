#include "transforms/resample.h"

#include <algorithm>
#include <cmath>

namespace batchd::daemon {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

// Pillow's filters (Resample.c): the triangle of support 1, and Keys' cubic convolution with a = -0.5, support 2.
double bilinear_filter(double x) {
  if (x < 0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double filter_support(ResampleFilter filter) { return filter == ResampleFilter::kBicubic ? 2.0 : 1.0; }

inline uint8_t clip8(int32_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

}  // namespace

ResampleAxis pillow_axis(int in_size, float box0, float box1, int out_size) {
  const float extent = box1 - box0;  // float arithmetic, as Pillow's (double)(in1 - in0) on float in0, in1
  return {in_size, box0, static_cast<double>(box0) + extent, out_size, 0, out_size};
}

ResampleCoeffs resample_coeffs(const ResampleAxis& a, ResampleFilter filter) {
  ResampleCoeffs c;
  resample_coeffs(a, filter, &c);
  return c;
}

namespace {

// The taps of every output pixel of the axis' window with filter `Kernel` (support `support` input pixels).
template <double (*Kernel)(double)>
void fill_taps(const ResampleAxis& a, double scale, double filterscale, double support, ResampleCoeffs& c) {
  thread_local std::vector<double> k;
  k.resize(c.ksize);
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
      const double w = Kernel((x + xmin - center + 0.5) * ss);
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
}

}  // namespace

void resample_coeffs(const ResampleAxis& a, ResampleFilter filter, ResampleCoeffs* out) {
  const double scale = (a.box1 - a.box0) / a.out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = filter_support(filter) * filterscale;
  ResampleCoeffs& c = *out;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(a.out_count) * 2);
  c.taps.assign(static_cast<size_t>(a.out_count) * c.ksize, 0);
  if (filter == ResampleFilter::kBicubic) fill_taps<bicubic_filter>(a, scale, filterscale, support, c);
  else fill_taps<bilinear_filter>(a, scale, filterscale, support, c);
}

std::pair<int, int> resample_input_range(const ResampleAxis& a, ResampleFilter filter) {
  if (a.out_count <= 0) return {0, 0};
  if (filter == ResampleFilter::kNearest) return nearest_input_range(a);
  // The same expressions as resample_coeffs(): output centers grow with the index, so the first output's window
  // starts the range and the last one's ends it.
  const double scale = (a.box1 - a.box0) / a.out_size;
  const double support = filter_support(filter) * std::max(scale, 1.0);
  const double first_center = a.box0 + (a.out_begin + 0.5) * scale;
  const double last_center = a.box0 + (a.out_begin + a.out_count - 1 + 0.5) * scale;
  const int first = std::max(0, static_cast<int>(first_center - support + 0.5));
  const int last = std::min(a.in_size, static_cast<int>(last_center + support + 0.5));
  return {std::min(first, last), last};
}

namespace {

// One horizontal pass: `rows` rows of `in` (pixel 0 of row r at in + r * in_stride) -> out (rows x out_w pixels).
// The three channels of a pixel are accumulated as one 4-lane vector (GCC/Clang vector extensions); the fourth lane
// reads the next byte and is discarded, so a tap on the extent's last pixel (`last_x`) is read 3 bytes at a time.
[[gnu::always_inline]] inline void horizontal_pass(const uint8_t* in, size_t in_stride, int rows, const ResampleCoeffs& cx, int x_shift,
                            int out_w, int last_x, uint8_t* out) {
  typedef int32_t v4si __attribute__((vector_size(16)));
  typedef uint8_t v4qu __attribute__((vector_size(4)));
  // Read once: the stores to `out` (bytes) may alias anything, so members read in the loop would be reloaded.
  const int* const bounds = cx.bounds.data();
  const int32_t* const all_taps = cx.taps.data();
  const int ksize = cx.ksize;
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = in + static_cast<size_t>(r) * in_stride;
    uint8_t* o = out + static_cast<size_t>(r) * out_w * 3;
    for (int i = 0; i < out_w; ++i) {
      const int xmin = bounds[2 * i] - x_shift, n = bounds[2 * i + 1];
      const int32_t* k = all_taps + static_cast<size_t>(i) * ksize;
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

// The horizontal pass of the kFast order: two output pixels per step in one 8-lane vector (lanes 0-2: pixel i,
// 4-6: pixel i + 1) over max(taps of i, taps of i + 1) taps; a pixel's taps past its own count are 0 (see
// resample_coeffs), so the extra ones read a neighbour's bytes and add nothing. `in` must have (ksize + 2) * 3
// readable bytes after its last row. Same arithmetic as horizontal_pass(), so the same output.
[[gnu::always_inline]] inline void horizontal_pass_pairs(const uint8_t* in, size_t in_stride, int rows, const ResampleCoeffs& cx,
                                  int x_shift, int out_w, uint8_t* out) {
  typedef int32_t v8si __attribute__((vector_size(32)));
  typedef uint8_t v8qu __attribute__((vector_size(8)));
  typedef uint32_t v2su __attribute__((vector_size(8)));
  typedef uint8_t v32qu __attribute__((vector_size(32)));
  const int pairs = out_w / 2;
  // Per pair: the tap count, both pixels' first input byte, and each tap as {k_i x4, k_i+1 x4}.
  // (int32_t, not v8si: std::vector drops a vector type's 32-byte alignment; taps are loaded unaligned.)
  thread_local std::vector<int32_t> taps;
  thread_local std::vector<int> plan;
  taps.assign(static_cast<size_t>(pairs) * cx.ksize * 8, 0);
  plan.resize(static_cast<size_t>(pairs) * 3);
  for (int p = 0; p < pairs; ++p) {
    const int a = 2 * p, b = a + 1;
    plan[3 * p] = std::max(cx.bounds[2 * a + 1], cx.bounds[2 * b + 1]);
    plan[3 * p + 1] = (cx.bounds[2 * a] - x_shift) * 3;
    plan[3 * p + 2] = (cx.bounds[2 * b] - x_shift) * 3;
    for (int t = 0; t < cx.ksize; ++t) {
      const int32_t ka = cx.taps[static_cast<size_t>(a) * cx.ksize + t], kb = cx.taps[static_cast<size_t>(b) * cx.ksize + t];
      const v8si both{ka, ka, ka, ka, kb, kb, kb, kb};
      __builtin_memcpy(&taps[(static_cast<size_t>(p) * cx.ksize + t) * 8], &both, sizeof(both));
    }
  }
  constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);
  const int ksize = cx.ksize;  // read once, as in horizontal_pass()
  const v8si zero{}, top = zero + (255 << kPrecisionBits) + ((1 << kPrecisionBits) - 1);
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = in + static_cast<size_t>(r) * in_stride;
    uint8_t* o = out + static_cast<size_t>(r) * out_w * 3;
    for (int p = 0; p < pairs; ++p) {
      const int n = plan[3 * p];
      const uint8_t* pa = row + plan[3 * p + 1];
      const uint8_t* pb = row + plan[3 * p + 2];
      const int32_t* k = taps.data() + static_cast<size_t>(p) * ksize * 8;
      v8si acc = zero + kHalf;
      for (int t = 0; t < n; ++t, pa += 3, pb += 3, k += 8) {
        uint32_t wa, wb;  // two 4-byte loads into one vector (not via memory: that would stall store forwarding)
        __builtin_memcpy(&wa, pa, 4);
        __builtin_memcpy(&wb, pb, 4);
        const v2su both = {wa, wb};
        v8si kt;
        __builtin_memcpy(&kt, k, sizeof(kt));
        acc += __builtin_convertvector(reinterpret_cast<const v8qu&>(both), v8si) * kt;
      }
      acc = acc < zero ? zero : acc;  // clamp to [0, 255] before the shift, as clip8() after it
      acc = acc > top ? top : acc;
      const v32qu b = reinterpret_cast<v32qu>(acc >> kPrecisionBits);  // each lane's low byte is its value
      const v8qu px = __builtin_shufflevector(b, b, 0, 4, 8, 16, 20, 24, 0, 0);
      __builtin_memcpy(o + 6 * p, &px, 6);
    }
  }
  if (out_w % 2 != 0) {  // the odd last column
    thread_local ResampleCoeffs last;
    last.ksize = cx.ksize;
    last.bounds = {cx.bounds[2 * (out_w - 1)], cx.bounds[2 * (out_w - 1) + 1]};
    last.taps.assign(cx.taps.end() - cx.ksize, cx.taps.end());
    for (int r = 0; r < rows; ++r) {
      horizontal_pass(in + static_cast<size_t>(r) * in_stride, 0, 1, last, x_shift, 1, 1 << 30,
                      out + (static_cast<size_t>(r) * out_w + out_w - 1) * 3);
    }
  }
}

// One vertical pass: for each output row j, the taps of cy over rows (bounds - y_shift) of `in` (row stride
// in_stride), `width_bytes` bytes wide -> out (row stride width_bytes).
[[gnu::always_inline]] inline void vertical_pass(const uint8_t* in, size_t in_stride, size_t width_bytes, const ResampleCoeffs& cy,
                          int y_shift, int out_rows, uint8_t* out, std::vector<int32_t>* acc) {
  acc->resize(width_bytes);
  int32_t* a = acc->data();
  const int* const bounds = cy.bounds.data();  // read once, as in horizontal_pass()
  const int32_t* const all_taps = cy.taps.data();
  const int ksize = cy.ksize;
  for (int j = 0; j < out_rows; ++j) {
    const int ymin = bounds[2 * j] - y_shift, n = bounds[2 * j + 1];
    const int32_t* k = all_taps + static_cast<size_t>(j) * ksize;
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
void resample(const RgbImage& src, int x_origin, int y_origin, const ResampleAxis& xa, const ResampleAxis& ya,
              ResampleFilter filter, uint8_t* dst, std::vector<uint8_t>* scratch, ResampleOrder order) {
  if (filter == ResampleFilter::kNearest) {
    resample_nearest(src, x_origin, y_origin, xa, ya, dst);
    return;
  }
  // The tables are kept per thread (no allocation once grown) but used from locals that never leave this function:
  // the hot loops then keep their fields in registers, as when the tables were fresh locals (measured: the
  // thread_local itself cost ~1 instruction per output pixel, 2.7% of a 500x375 -> 224 resample).
  thread_local ResampleCoeffs kept_x, kept_y;
  resample_coeffs(xa, filter, &kept_x);
  resample_coeffs(ya, filter, &kept_y);
  ResampleCoeffs cx, cy;
  cx.bounds.swap(kept_x.bounds), cx.taps.swap(kept_x.taps), cx.ksize = kept_x.ksize;
  cy.bounds.swap(kept_y.bounds), cy.taps.swap(kept_y.taps), cy.ksize = kept_y.ksize;
  const auto [y_first, y_last] = input_range(cy, ya.out_count, ya.in_size);
  const auto [x_first, x_last] = input_range(cx, xa.out_count, xa.in_size);
  const size_t src_stride = static_cast<size_t>(src.width) * 3;
  const int out_w = xa.out_count;
  thread_local std::vector<int32_t> acc;
  if (order == ResampleOrder::kPillow || filter == ResampleFilter::kBicubic) {
    // Pillow: horizontal over the rows the vertical pass will read, then vertical.
    const int rows = y_last - y_first;
    scratch->resize(static_cast<size_t>(rows) * out_w * 3);
    horizontal_pass(src.row(y_origin + y_first), src_stride, rows, cx, -x_origin, out_w,
                    std::min(xa.in_size - 1 + x_origin, src.width - 1), scratch->data());
    vertical_pass(scratch->data(), static_cast<size_t>(out_w) * 3, static_cast<size_t>(out_w) * 3, cy, y_first,
                  ya.out_count, dst, &acc);
  } else {
    // Vertical first, over only the columns the horizontal pass will read: when the image shrinks more in height
    // than in width this does far less work; results differ from Pillow's by at most one level (rounding order).
    const int cols = x_last - x_first;
    scratch->resize(static_cast<size_t>(ya.out_count) * cols * 3 + (cx.ksize + 2) * 3);
    vertical_pass(src.row(0) + static_cast<size_t>(x_origin + x_first) * 3, src_stride,
                  static_cast<size_t>(cols) * 3, cy, -y_origin, ya.out_count, scratch->data(), &acc);
    horizontal_pass_pairs(scratch->data(), static_cast<size_t>(cols) * 3, ya.out_count, cx, x_first, out_w, dst);
  }
  kept_x.bounds.swap(cx.bounds), kept_x.taps.swap(cx.taps);
  kept_y.bounds.swap(cy.bounds), kept_y.taps.swap(cy.taps);
}

}  // namespace batchd::daemon
