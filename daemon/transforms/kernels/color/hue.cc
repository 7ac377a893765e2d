// F.adjust_hue on PIL images (color.h): img.convert("HSV"), H + np.uint8(hue_factor * 255) modulo 256, back to RGB.
// The conversions are Pillow 9.4's Convert.c rgb2hsv_row and hsv2rgb ("following colorsys.py"), with their mix of
// float variables and double constants kept as written there: each rounding happens where Pillow's does.
#include <cstddef>
#include <cstdint>

#include "transforms/kernels/color/color.h"

namespace batchd::daemon {
namespace {

inline int clip8(int v) { return v <= 0 ? 0 : v >= 255 ? 255 : v; }

// C's round() (half away from zero) for x >= 0, inline: trunc(x) and x - trunc(x) are exact in doubles.
inline int round_nonnegative(double x) {
  const auto whole = static_cast<int>(x);
  return whole + (x - whole >= 0.5 ? 1 : 0);
}

// Every division of Convert.c's rgb2hsv_row and hsv2rgb, and the weights they lead to, depend on one or two bytes:
// they are computed once, with Pillow's expressions, into tables (1.3 MB, built on first use, thread-safe).
struct HueTables {
  float ratio[256][256];        // [cr][d] = (float)d / (float)cr: rc, gc, bc of rgb2hsv_row
  uint8_t saturation[256][256]; // [cr][maxc] = CLIP8((int)(cr / (float)maxc * 255.0))
  uint8_t sector[256];          // [h] = i % 6 of hsv2rgb, i = floor(h * 6.0 / 255.0)
  double wp[256];               // [s]: v * wp rounds to p = round(v * (1.0 - fs))
  double wq[256][256];          // [s][h]: q = round(v * (1.0 - fs * f)), fs * f a float product
  double wt[256][256];          // [s][h]: t = round(v * (1.0 - fs * (1.0 - f)))

  HueTables() {
    for (int cr = 1; cr < 256; ++cr) {
      for (int d = 0; d < 256; ++d) ratio[cr][d] = static_cast<float>(d) / static_cast<float>(cr);
      for (int maxc = cr; maxc < 256; ++maxc) {
        const float s = static_cast<float>(cr) / static_cast<float>(maxc);
        saturation[cr][maxc] = static_cast<uint8_t>(clip8(static_cast<int>(s * 255.0)));
      }
    }
    for (int h = 0; h < 256; ++h) {
      const int i = static_cast<int>(static_cast<float>(h) * 6.0 / 255.0);  // floor() of a value >= 0
      sector[h] = static_cast<uint8_t>(i % 6);
      const float f = static_cast<float>(static_cast<float>(h) * 6.0 / 255.0 - static_cast<float>(i));
      for (int s = 0; s < 256; ++s) {
        const float fs = static_cast<float>(static_cast<float>(s) / 255.0);
        const float fs_f = fs * f;  // float * float, rounded to float before the double subtraction
        wp[s] = 1.0 - fs;
        wq[s][h] = 1.0 - fs_f;
        wt[s][h] = 1.0 - fs * (1.0 - f);
      }
    }
  }
};

const HueTables& tables() {
  static const auto* t = new HueTables();  // never freed: used until exit, from any thread
  return *t;
}

// Convert.c rgb2hsv_row.
inline void rgb_to_hsv(const HueTables& t, const uint8_t* rgb, uint8_t* h_out, uint8_t* s_out, uint8_t* v_out) {
  const uint8_t r = rgb[0], g = rgb[1], b = rgb[2];
  const uint8_t maxc = r > g ? (r > b ? r : b) : (g > b ? g : b);
  const uint8_t minc = r < g ? (r < b ? r : b) : (g < b ? g : b);
  *v_out = maxc;
  if (minc == maxc) {
    *h_out = 0;
    *s_out = 0;
    return;
  }
  const int cr = maxc - minc;
  const float rc = t.ratio[cr][maxc - r];
  const float gc = t.ratio[cr][maxc - g];
  const float bc = t.ratio[cr][maxc - b];
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
  *s_out = t.saturation[cr][maxc];
}

// Convert.c hsv2rgb.
inline void hsv_to_rgb(const HueTables& t, uint8_t h, uint8_t s, uint8_t v, uint8_t* rgb) {
  if (s == 0) {
    rgb[0] = rgb[1] = rgb[2] = v;
    return;
  }
  // round() of values >= 0 (fs and f are in [0, 1]); (float)v * w is v * w in double.
  const double fv = v;
  const auto up = static_cast<uint8_t>(clip8(round_nonnegative(fv * t.wp[s])));
  const auto uq = static_cast<uint8_t>(clip8(round_nonnegative(fv * t.wq[s][h])));
  const auto ut = static_cast<uint8_t>(clip8(round_nonnegative(fv * t.wt[s][h])));
  switch (t.sector[h]) {
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
  const HueTables& t = tables();
  uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height;
  for (size_t k = 0; k < n; ++k, p += 3) {
    uint8_t h, s, v;
    rgb_to_hsv(t, p, &h, &s, &v);
    hsv_to_rgb(t, static_cast<uint8_t>(h + shift), s, v, p);
  }
}

}  // namespace batchd::daemon
