// ImageOps' look-up-table operations (color.h; Pillow 9.4 ImageOps.py): posterize, solarize, invert, autocontrast,
// equalize. Each builds ImageOps' table (one per channel where it depends on that channel's histogram) and maps
// every pixel through it, as ImageOps._lut / Image.point do.
#include <array>
#include <cstddef>
#include <cstdint>

#include "transforms/kernels/color/color.h"

namespace batchd::daemon {
namespace {

using Lut = std::array<uint8_t, 256>;
using Histogram = std::array<uint64_t, 256>;

void apply_lut(RgbImage& img, const Lut& lut) {
  for (uint8_t& v : img.pixels) v = lut[v];
}

void identity(Lut* lut) {
  for (int i = 0; i < 256; ++i) (*lut)[i] = static_cast<uint8_t>(i);
}

// Image.histogram() (256 counts per channel), make_lut(channel's histogram, &table) for each channel, then each
// channel through its table.
template <typename MakeLut>
void map_by_histograms(RgbImage& img, MakeLut make_lut) {
  std::array<Histogram, 3> h{};
  uint8_t* p = img.pixels.data();
  const size_t n = static_cast<size_t>(img.width) * img.height;
  for (size_t i = 0; i < n; ++i, p += 3) {
    ++h[0][p[0]];
    ++h[1][p[1]];
    ++h[2][p[2]];
  }
  std::array<Lut, 3> luts;
  for (int c = 0; c < 3; ++c) make_lut(h[c], &luts[c]);
  p = img.pixels.data();
  for (size_t i = 0; i < n; ++i, p += 3) {
    p[0] = luts[0][p[0]];
    p[1] = luts[1][p[1]];
    p[2] = luts[2][p[2]];
  }
}

}  // namespace

void posterize(RgbImage& img, int bits) {
  const int mask = ~((1 << (8 - bits)) - 1);  // ImageOps: ~(2 ** (8 - bits) - 1)
  Lut lut;
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i & mask);
  apply_lut(img, lut);
}

void solarize(RgbImage& img, double threshold) {
  Lut lut;
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i < threshold ? i : 255 - i);
  apply_lut(img, lut);
}

void invert(RgbImage& img) {
  for (uint8_t& v : img.pixels) v = static_cast<uint8_t>(255 - v);
}

void autocontrast(RgbImage& img) {
  map_by_histograms(img, [](const Histogram& h, Lut* lut) {
    int lo = 0, hi = 255;
    while (lo < 255 && h[lo] == 0) ++lo;
    while (hi > 0 && h[hi] == 0) --hi;
    if (hi <= lo) return identity(lut);
    // Python floats: scale = 255.0 / (hi - lo); offset = -lo * scale; int(ix * scale + offset), clamped.
    const double scale = 255.0 / (hi - lo);
    const double offset = -lo * scale;
    for (int ix = 0; ix < 256; ++ix) {
      const double product = ix * scale;
      const int v = static_cast<int>(product + offset);
      (*lut)[ix] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  });
}

void equalize(RgbImage& img) {
  map_by_histograms(img, [](const Histogram& h, Lut* lut) {
    // histo = the non-zero counts; step = (sum(histo) - histo[-1]) // 255.
    uint64_t total = 0, last = 0;
    int nonzero = 0;
    for (const uint64_t count : h) {
      if (count == 0) continue;
      total += count;
      last = count;
      ++nonzero;
    }
    const uint64_t step = nonzero <= 1 ? 0 : (total - last) / 255;
    if (step == 0) return identity(lut);
    uint64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      const uint64_t v = n / step;
      (*lut)[i] = static_cast<uint8_t>(v > 255 ? 255 : v);  // Image.point clips a table entry past 255
      n += h[i];
    }
  });
}

}  // namespace batchd::daemon
