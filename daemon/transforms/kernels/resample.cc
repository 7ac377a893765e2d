#include "transforms/kernels/resample.h"

#include <algorithm>
#include <cmath>

#include "transforms/kernels/resample_passes.h"

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

// The [first, last) input range an axis reads.
std::pair<int, int> input_range(const ResampleCoeffs& c, int count, int in_size) {
  int first = in_size, last = 0;
  for (int i = 0; i < count; ++i) {
    first = std::min(first, c.bounds[2 * i]);
    last = std::max(last, c.bounds[2 * i] + c.bounds[2 * i + 1]);
  }
  return last <= first ? std::pair<int, int>{0, 0} : std::pair<int, int>{first, last};
}

// Pillow 13's choice of pass order: vertical first when the vertical pass shrinks the image by more than twice as
// many pixels as the horizontal pass does, 2 * (in_w - out_w) < in_h - out_h with in_h > out_h (the image's and the
// output's sizes, not a box's); otherwise horizontal first, as Pillow 9.x always did. Measured against Pillow
// 13.0.0's resize on noise images (every output size around the boundary, ties included, boxes too).
bool pillow_vertical_first(const ResampleAxis& x, const ResampleAxis& y) {
  return y.out_size < y.in_size && 2 * (x.in_size - x.out_size) < y.in_size - y.out_size;
}

}  // namespace

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
  const PassTaps tx{cx.bounds.data(), cx.taps.data(), cx.ksize}, ty{cy.bounds.data(), cy.taps.data(), cy.ksize};
  const bool vertical_first =
      pillow_vertical_first(xa, ya) || (order == ResampleOrder::kFast && filter == ResampleFilter::kBilinear);
  if (!vertical_first) {
    // Pillow's horizontal-first order: horizontal over the rows the vertical pass will read, then vertical.
    const int rows = y_last - y_first;
    scratch->resize(static_cast<size_t>(rows) * out_w * 3);
    horizontal_pass(src.row(y_origin + y_first), src_stride, src.pixels.data() + src.pixels.size(), rows, tx,
                    -x_origin, out_w, scratch->data());
    vertical_pass(scratch->data(), static_cast<size_t>(out_w) * 3, static_cast<size_t>(out_w) * 3, ty, y_first,
                  ya.out_count, dst);
  } else {
    // Vertical first (Pillow's order when pillow_vertical_first(), else kFast's), over only the columns the
    // horizontal pass will read: when the image shrinks more in height than in width this does far less work; where
    // Pillow runs horizontal first, results differ from Pillow's by at most one level (rounding order).
    // The scratch's slack lets the horizontal pass's 16-byte windows stay vectorized on the last rows.
    const int cols = x_last - x_first;
    const size_t bytes = static_cast<size_t>(ya.out_count) * cols * 3;
    scratch->resize(bytes + static_cast<size_t>(cx.ksize) * 3 + 64);
    vertical_pass(src.row(0) + static_cast<size_t>(x_origin + x_first) * 3, src_stride,
                  static_cast<size_t>(cols) * 3, ty, -y_origin, ya.out_count, scratch->data());
    horizontal_pass(scratch->data(), static_cast<size_t>(cols) * 3, scratch->data() + scratch->size(),
                    ya.out_count, tx, x_first, out_w, dst);
  }
  kept_x.bounds.swap(cx.bounds), kept_x.taps.swap(cx.taps);
  kept_y.bounds.swap(cy.bounds), kept_y.taps.swap(cy.taps);
}

}  // namespace batchd::daemon
