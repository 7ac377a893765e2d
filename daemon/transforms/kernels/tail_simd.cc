// tail_simd.cc — see tail_simd.h. Highway's foreach_target compiles this file once per target; the dispatch at the
// end picks the best the CPU supports.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "transforms/kernels/tail_simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstddef>

#include "transforms/kernels/tail_simd.h"

HWY_BEFORE_NAMESPACE();
namespace batchd::daemon {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class DF, class VF = hn::Vec<DF>>
HWY_INLINE VF Chain(DF df, const FloatChain& chain, int c, VF x) {
  for (int s = 0; s < chain.count; ++s) {
    const FloatChain::Step& step = chain.steps[s];
    if (step.div255) {
      x = hn::Div(x, hn::Set(df, 255.0f));
    } else {
      x = hn::Div(hn::Sub(x, hn::Set(df, step.mean[c])), hn::Set(df, step.std[c]));
    }
  }
  return x;
}

void WriteFloatChain(const RgbImage& image, bool flip_h, bool flip_v, const FloatChain& chain,
                     const float (&lut)[3][256], bool hwc, float* dst) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const int n = static_cast<int>(hn::Lanes(df));
  const int w = image.width, h = image.height;
  const size_t plane = static_cast<size_t>(w) * h;
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = image.row(flip_v ? h - 1 - y : y);
    float* r = hwc ? dst + static_cast<size_t>(y) * w * 3 : dst + static_cast<size_t>(y) * w;
    float* g = hwc ? nullptr : r + plane;
    float* b = hwc ? nullptr : g + plane;
    // x: the output column. The stores run forward along the row, mirrored or not (a mirrored row reads its source
    // backwards instead): stores running backwards made the whole write about 40% slower (train224 flips half its
    // samples: 48 against 34 µs per sample, batchd-bench --stages).
    int x = 0;
    for (; x + n <= w; x += n) {
      const int from = flip_h ? w - x - n : x;
      hn::Vec<decltype(d8)> r8, g8, b8;
      hn::LoadInterleaved3(d8, row + 3 * static_cast<size_t>(from), r8, g8, b8);
      auto fr = Chain(df, chain, 0, hn::ConvertTo(df, hn::PromoteTo(di, r8)));
      auto fg = Chain(df, chain, 1, hn::ConvertTo(df, hn::PromoteTo(di, g8)));
      auto fb = Chain(df, chain, 2, hn::ConvertTo(df, hn::PromoteTo(di, b8)));
      if (flip_h) {
        fr = hn::Reverse(df, fr);
        fg = hn::Reverse(df, fg);
        fb = hn::Reverse(df, fb);
      }
      if (hwc) {
        hn::StoreInterleaved3(fr, fg, fb, df, r + 3 * static_cast<size_t>(x));
      } else {
        hn::StoreU(fr, df, r + x);
        hn::StoreU(fg, df, g + x);
        hn::StoreU(fb, df, b + x);
      }
    }
    for (; x < w; ++x) {  // past the last full vector: the table
      const uint8_t* px = row + 3 * static_cast<size_t>(flip_h ? w - 1 - x : x);
      if (hwc) {
        for (int c = 0; c < 3; ++c) r[3 * static_cast<size_t>(x) + c] = lut[c][px[c]];
      } else {
        r[x] = lut[0][px[0]];
        g[x] = lut[1][px[1]];
        b[x] = lut[2][px[2]];
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace batchd::daemon
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace batchd::daemon {

HWY_EXPORT(WriteFloatChain);

void write_float_chain(const RgbImage& image, bool flip_h, bool flip_v, const FloatChain& chain,
                       const float (&lut)[3][256], bool hwc, float* dst) {
  HWY_DYNAMIC_DISPATCH(WriteFloatChain)(image, flip_h, flip_v, chain, lut, hwc, dst);
}

}  // namespace batchd::daemon
#endif  // HWY_ONCE
