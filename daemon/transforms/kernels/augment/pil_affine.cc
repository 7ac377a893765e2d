// Pillow 9.4's affine engine (src/libImaging/Geometry.c) and Image.rotate (PIL/Image.py); see pil_affine.h.
#include "transforms/kernels/augment/pil_affine.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace batchd::daemon::augment {

namespace {

constexpr double kDegToRad = 3.14159265358979323846 / 180.0;  // CPython's math.radians: x * (pi / 180)

// Geometry.c's COORD and FLOOR.
inline int coord(double v) { return v < 0.0 ? -1 : static_cast<int>(v); }
inline int floor_int(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }
inline int clip(int v, int size) { return v < 0 ? 0 : v < size ? v : size - 1; }

inline const uint8_t* pixel(const RgbImage& im, int x, int y) {
  return im.pixels.data() + (static_cast<size_t>(y) * im.width + x) * 3;
}

void prepare(const RgbImage& src, FillColor fill, RgbImage* dst) {
  dst->width = src.width;
  dst->height = src.height;
  dst->pixels.resize(src.pixels.size());
  uint8_t* out = dst->pixels.data();
  for (size_t i = 0; i < src.pixels.size(); i += 3) std::memcpy(out + i, fill.rgb, 3);
}

// ImagingScaleAffine: nearest, no rotation or shear (a1 == a3 == 0).
void scale_affine(const RgbImage& src, const AffineMatrix& a, RgbImage* dst) {
  const int w = dst->width, h = dst->height;
  int xmin = w, xmax = 0;
  double xo = a[2] + a[0] * 0.5;
  for (int x = 0; x < w; ++x, xo += a[0]) {
    const int xin = coord(xo);
    if (xin >= 0 && xin < src.width) {
      xmax = x + 1;
      if (x < xmin) xmin = x;
    }
  }
  double yo = a[5] + a[4] * 0.5;
  for (int y = 0; y < h; ++y, yo += a[4]) {
    const int yi = coord(yo);
    if (yi < 0 || yi >= src.height) continue;
    uint8_t* out = dst->pixels.data() + static_cast<size_t>(y) * w * 3;
    // The columns' sources, as Pillow's pretabulated xintab (the same accumulation, so the same values).
    double xs = a[2] + a[0] * 0.5;
    for (int x = 0; x < xmin; ++x) xs += a[0];
    for (int x = xmin; x < xmax; ++x, xs += a[0]) std::memcpy(out + x * 3, pixel(src, coord(xs), yi), 3);
  }
}

bool check_fixed(const AffineMatrix& a, int x, int y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

// affine_fixed: nearest in 16.16 fixed point.
void affine_fixed(const RgbImage& src, const AffineMatrix& a, RgbImage* dst) {
  auto fix = [](double v) { return static_cast<int64_t>(floor_int(v * 65536.0 + 0.5)); };
  const int64_t a0 = fix(a[0]), a1 = fix(a[1]), a3 = fix(a[3]), a4 = fix(a[4]);
  int64_t a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
  int64_t a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
  uint8_t* out = dst->pixels.data();
  for (int y = 0; y < dst->height; ++y, a2 += a1, a5 += a4) {
    int64_t xx = a2, yy = a5;
    for (int x = 0; x < dst->width; ++x, out += 3, xx += a0, yy += a3) {
      const int64_t xin = xx >> 16;
      if (xin < 0 || xin >= src.width) continue;
      const int64_t yin = yy >> 16;
      if (yin >= 0 && yin < src.height) std::memcpy(out, pixel(src, static_cast<int>(xin), static_cast<int>(yin)), 3);
    }
  }
}

// ImagingTransformAffine's floating point walk (corners beyond the fixed point range).
void affine_float(const RgbImage& src, const AffineMatrix& a, RgbImage* dst) {
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  uint8_t* out = dst->pixels.data();
  for (int y = 0; y < dst->height; ++y, xo += a[1], yo += a[4]) {
    double xx = xo, yy = yo;
    for (int x = 0; x < dst->width; ++x, out += 3, xx += a[0], yy += a[3]) {
      const int xin = coord(xx);
      if (xin < 0 || xin >= src.width) continue;
      const int yin = coord(yy);
      if (yin >= 0 && yin < src.height) std::memcpy(out, pixel(src, xin, yin), 3);
    }
  }
}

// bilinear_filter32RGB: false when (xin, yin) is outside the image (the pixel keeps the fill).
bool bilinear(const RgbImage& im, double xin, double yin, uint8_t* out) {
  if (xin < 0.0 || xin >= im.width || yin < 0.0 || yin >= im.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  const int x = floor_int(xin), y = floor_int(yin);
  const double dx = xin - x, dy = yin - y;
  const int x0 = clip(x, im.width), x1 = clip(x + 1, im.width);
  const bool has_next = y + 1 >= 0 && y + 1 < im.height;
  for (int b = 0; b < 3; ++b) {
    const uint8_t* in = im.row(clip(y, im.height)) + b;
    double v1 = in[x0 * 3] + (in[x1 * 3] - in[x0 * 3]) * dx;
    double v2 = v1;
    if (has_next) {
      in = im.row(y + 1) + b;
      v2 = in[x0 * 3] + (in[x1 * 3] - in[x0 * 3]) * dx;
    }
    v1 = v1 + (v2 - v1) * dy;
    out[b] = static_cast<uint8_t>(v1);
  }
  return true;
}

// Geometry.c's BICUBIC macro; T is int for the taps of a row, double for the column of row results.
template <typename T>
double cubic(T v1, T v2, T v3, T v4, double d) {
  const double p1 = v2;
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

// bicubic_filter32RGB.
bool bicubic(const RgbImage& im, double xin, double yin, uint8_t* out) {
  if (xin < 0.0 || xin >= im.width || yin < 0.0 || yin >= im.height) return false;
  xin -= 0.5;
  yin -= 0.5;
  const int x = floor_int(xin) - 1, y = floor_int(yin) - 1;
  const double dx = xin - (x + 1), dy = yin - (y + 1);
  int xs[4];
  for (int k = 0; k < 4; ++k) xs[k] = clip(x + k, im.width) * 3;
  for (int b = 0; b < 3; ++b) {
    auto row_value = [&](int yy) {
      const uint8_t* in = im.row(yy) + b;
      return cubic<int>(in[xs[0]], in[xs[1]], in[xs[2]], in[xs[3]], dx);
    };
    const double v1 = row_value(clip(y, im.height));
    const double v2 = (y + 1 >= 0 && y + 1 < im.height) ? row_value(y + 1) : v1;
    const double v3 = (y + 2 >= 0 && y + 2 < im.height) ? row_value(y + 2) : v2;
    const double v4 = (y + 3 >= 0 && y + 3 < im.height) ? row_value(y + 3) : v3;
    const double v = cubic<double>(v1, v2, v3, v4, dy);
    out[b] = v <= 0.0 ? 0 : v >= 255.0 ? 255 : static_cast<uint8_t>(v);
  }
  return true;
}

// ImagingGenericTransform with affine_transform and the filter.
template <bool (*Filter)(const RgbImage&, double, double, uint8_t*)>
void generic_affine(const RgbImage& src, const AffineMatrix& a, RgbImage* dst) {
  uint8_t* out = dst->pixels.data();
  for (int y = 0; y < dst->height; ++y) {
    const double yin = y + 0.5;
    for (int x = 0; x < dst->width; ++x, out += 3) {
      const double xin = x + 0.5;
      Filter(src, a[0] * xin + a[1] * yin + a[2], a[3] * xin + a[4] * yin + a[5], out);
    }
  }
}

// Python's x % y for floats (the result takes the sign of y).
double py_mod(double x, double y) {
  double m = std::fmod(x, y);
  if (m != 0.0) {
    if ((y < 0) != (m < 0)) m += y;
  } else {
    m = std::copysign(0.0, y);
  }
  return m;
}

// Python's round(x, 15): correctly rounded to 15 decimals (printf and strtod round exactly, ties to even).
double py_round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", x);
  return std::strtod(buf, nullptr);
}

}  // namespace

void pil_affine(const RgbImage& src, const AffineMatrix& a, PilFilter filter, FillColor fill, RgbImage* dst) {
  prepare(src, fill, dst);
  if (filter == PilFilter::kBilinear) return generic_affine<bilinear>(src, a, dst);
  if (filter == PilFilter::kBicubic) return generic_affine<bicubic>(src, a, dst);
  if (a[1] == 0 && a[3] == 0) return scale_affine(src, a, dst);
  const int w = dst->width, h = dst->height;
  if (check_fixed(a, 0, 0) && check_fixed(a, w, h) && check_fixed(a, 0, h) && check_fixed(a, w, 0)) {
    return affine_fixed(src, a, dst);
  }
  affine_float(src, a, dst);
}

void pil_rotate(const RgbImage& src, double angle_degrees, PilFilter filter, FillColor fill, RgbImage* dst) {
  const double angle = py_mod(angle_degrees, 360.0);
  const int w = src.width, h = src.height;
  const bool quarter = (angle == 90 || angle == 270) && w == h;
  if (angle == 0 || angle == 180 || quarter) {  // Image.rotate's fast paths: copy and transpose
    dst->width = angle == 0 || angle == 180 ? w : h;
    dst->height = angle == 0 || angle == 180 ? h : w;
    dst->pixels.resize(src.pixels.size());
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        int ox = x, oy = y;                            // copy
        if (angle == 180) ox = w - 1 - x, oy = h - 1 - y;  // ImagingRotate180
        if (angle == 90) ox = y, oy = w - 1 - x;           // ImagingRotate90 (counter-clockwise)
        if (angle == 270) ox = h - 1 - y, oy = x;          // ImagingRotate270
        std::memcpy(dst->pixels.data() + (static_cast<size_t>(oy) * dst->width + ox) * 3, pixel(src, x, y), 3);
      }
    }
    return;
  }
  const double r = -(angle * kDegToRad);
  AffineMatrix m = {py_round15(std::cos(r)), py_round15(std::sin(r)), 0.0,
                    py_round15(-std::sin(r)), py_round15(std::cos(r)), 0.0};
  const double cx = w / 2.0, cy = h / 2.0;
  const double tx = -cx - 0, ty = -cy - 0;  // the rotation centre, no post-translation
  m[2] = m[0] * tx + m[1] * ty + m[2];
  m[5] = m[3] * tx + m[4] * ty + m[5];
  m[2] += cx;
  m[5] += cy;
  pil_affine(src, m, filter, fill, dst);
}

AffineMatrix torchvision_inverse_affine_matrix(double cx, double cy, double angle, double tx, double ty,
                                               double scale, double shear_x, double shear_y) {
  const double rot = angle * kDegToRad;
  const double sx = shear_x * kDegToRad;
  const double sy = shear_y * kDegToRad;
  // RSS without scaling
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  AffineMatrix m = {d, -b, 0.0, -c, a, 0.0};
  for (double& v : m) v = v / scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

}  // namespace batchd::daemon::augment
