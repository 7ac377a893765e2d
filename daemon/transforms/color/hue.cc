// F.adjust_hue on PIL images (color.h): img.convert("HSV"), H + np.uint8(hue_factor * 255) modulo 256, back to RGB.
// The conversions are Pillow 9.4's Convert.c rgb2hsv_row and hsv2rgb ("following colorsys.py"), with their mix of
// float variables and double constants kept as written there: each rounding happens where Pillow's does.
#include <cstddef>
#include <cstdint>

#include "transforms/color/color.h"

namespace batchd::daemon {
namespace {

inline int clip8(int v) { return v <= 0 ? 0 : v >= 255 ? 255 : v; }

// C's round() (half away from zero) for x >= 0, inline: trunc(x) and x - trunc(x) are exact in doubles.
inline int round_nonnegative(double x) {
  const auto whole = static_cast<int>(x);
  return whole + (x - whole >= 0.5 ? 1 : 0);
}

// Convert.c rgb2hsv_row.
inline void rgb_to_hsv(const uint8_t* rgb, uint8_t* h_out, uint8_t* s_out, uint8_t* v_out) {
  const uint8_t r = rgb[0], g = rgb[1], b = rgb[2];
  const uint8_t maxc = r > g ? (r > b ? r : b) : (g > b ? g : b);
  const uint8_t minc = r < g ? (r < b ? r : b) : (g < b ? g : b);
  *v_out = maxc;
  if (minc == maxc) {
    *h_out = 0;
    *s_out = 0;
    return;
  }
  const float cr = static_cast<float>(maxc - minc);
  const float s = cr / static_cast<float>(maxc);
  const float rc = static_cast<float>(maxc - r) / cr;
  const float gc = static_cast<float>(maxc - g) / cr;
  const float bc = static_cast<float>(maxc - b) / cr;
  float h;
  if (r == maxc) {
    h = bc - gc;
  } else if (g == maxc) {
    h = static_cast<float>(2.0 + rc - bc);
  } else {
    h = static_cast<float>(4.0 + gc - rc);
  }
  // fmod(h / 6.0 + 1.0, 1.0): h is in [-1, 5], so the sum is in [5/6, 11/6] and fmod is at most one exact
  // subtraction of 1.0.
  const double wrapped = h / 6.0 + 1.0;
  h = static_cast<float>(wrapped >= 1.0 ? wrapped - 1.0 : wrapped);
  *h_out = static_cast<uint8_t>(clip8(static_cast<int>(h * 255.0)));
  *s_out = static_cast<uint8_t>(clip8(static_cast<int>(s * 255.0)));
}

// Convert.c hsv2rgb.
inline void hsv_to_rgb(uint8_t h, uint8_t s, uint8_t v, uint8_t* rgb) {
  if (s == 0) {
    rgb[0] = rgb[1] = rgb[2] = v;
    return;
  }
  const int i = static_cast<int>(static_cast<float>(h) * 6.0 / 255.0);  // floor() of a value >= 0
  const float f = static_cast<float>(static_cast<float>(h) * 6.0 / 255.0 - static_cast<float>(i));
  const float fs = static_cast<float>(static_cast<float>(s) / 255.0);
  // round() of values >= 0 (fs and f are in [0, 1]).
  const auto up = static_cast<uint8_t>(clip8(round_nonnegative(static_cast<float>(v) * (1.0 - fs))));
  const float fs_f = fs * f;  // float * float, rounded to float before the double subtraction
  const auto uq = static_cast<uint8_t>(clip8(round_nonnegative(static_cast<float>(v) * (1.0 - fs_f))));
  const auto ut = static_cast<uint8_t>(clip8(round_nonnegative(static_cast<float>(v) * (1.0 - fs * (1.0 - f)))));
  switch (i % 6) {
    case 0: rgb[0] = v; rgb[1] = ut; rgb[2] = up; break;
    case 1: rgb[0] = uq; rgb[1] = v; rgb[2] = up; break;
    case 2: rgb[0] = up; rgb[1] = v; rgb[2] = ut; break;
    case 3: rgb[0] = up; rgb[1] = uq; rgb[2] = v; break;
    case 4: rgb[0] = ut; rgb[1] = up; rgb[2] = v; break;
    default: rgb[0] = v; rgb[1] = up; rgb[2] = uq; break;
  }
}

}  // namespace

void adjust_hue(RgbImage& img, double hue_factor) {
  // np.uint8(hue_factor * 255): the float truncated toward zero, wrapped modulo 256 (numpy on x86-64).
  const auto shift = static_cast<uint8_t>(static_cast<int>(hue_factor * 255.0) & 0xff);
  uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height;
  for (size_t k = 0; k < n; ++k, p += 3) {
    uint8_t h, s, v;
    rgb_to_hsv(p, &h, &s, &v);
    hsv_to_rgb(static_cast<uint8_t>(h + shift), s, v, p);
  }
}

}  // namespace batchd::daemon
