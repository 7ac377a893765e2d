// blend_simd.cc — see blend_simd.h. Highway's foreach_target compiles this file once per target; the dispatch at
// the end picks the best the CPU supports.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "transforms/kernels/color/blend_simd.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>

#include "transforms/kernels/color/blend_simd.h"
#include "transforms/kernels/color/pil_pixel.h"

HWY_BEFORE_NAMESPACE();
namespace batchd::daemon {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Convert.c rgb2l on int32 lanes.
template <class DI, class VI = hn::Vec<DI>>
HWY_INLINE VI Luma(DI di, VI r, VI g, VI b) {
  const VI sum = hn::Add(hn::Add(hn::Mul(r, hn::Set(di, 19595)), hn::Mul(g, hn::Set(di, 38470))),
                         hn::Add(hn::Mul(b, hn::Set(di, 7471)), hn::Set(di, 0x8000)));
  return hn::ShiftRight<16>(sum);
}

// pil::Blend on lanes: float(d) + alpha * float(v - d), clipped to [0, 255], truncated.
template <class DF, class DI, class VI = hn::Vec<DI>>
HWY_INLINE VI Blend(DF df, DI di, hn::Vec<DF> alpha, VI d, VI v) {
  auto t = hn::Add(hn::ConvertTo(df, d), hn::Mul(alpha, hn::ConvertTo(df, hn::Sub(v, d))));
  t = hn::Min(hn::Max(t, hn::Zero(df)), hn::Set(df, 255.0f));
  return hn::ConvertTo(di, t);  // toward zero
}

void BlendImage(RgbImage& img, float alpha, int degenerate) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t n = hn::Lanes(df);
  const size_t pixels = static_cast<size_t>(img.width) * img.height;
  uint8_t* p = img.pixels.data();
  const auto va = hn::Set(df, alpha);
  const auto vd = hn::Set(di, degenerate);
  size_t i = 0;
  for (; i + n <= pixels; i += n, p += 3 * n) {
    hn::Vec<decltype(d8)> r8, g8, b8;
    hn::LoadInterleaved3(d8, p, r8, g8, b8);
    const auto r = hn::PromoteTo(di, r8), g = hn::PromoteTo(di, g8), b = hn::PromoteTo(di, b8);
    const auto d = degenerate == kPerPixelLuma ? Luma(di, r, g, b) : vd;
    hn::StoreInterleaved3(hn::DemoteTo(d8, Blend(df, di, va, d, r)), hn::DemoteTo(d8, Blend(df, di, va, d, g)),
                          hn::DemoteTo(d8, Blend(df, di, va, d, b)), d8, p);
  }
  const pil::Blend blend(alpha);
  for (; i < pixels; ++i, p += 3) {
    const int d = degenerate == kPerPixelLuma ? pil::luma(p[0], p[1], p[2]) : degenerate;
    for (int c = 0; c < 3; ++c) p[c] = blend(d, p[c]);
  }
}

uint64_t LumaSum(const RgbImage& img) {
  const hn::ScalableTag<int32_t> di;
  const hn::Rebind<uint8_t, decltype(di)> d8;
  const size_t n = hn::Lanes(di);
  const size_t pixels = static_cast<size_t>(img.width) * img.height;
  const uint8_t* p = img.pixels.data();
  uint64_t sum = 0;
  size_t i = 0;
  // A lane adds at most 255 per pixel: blocks of 2^16 pixels per lane keep every lane, and their sum over 16 lanes,
  // inside int32.
  while (i + n <= pixels) {
    auto acc = hn::Zero(di);
    const size_t block_end = std::min(pixels - pixels % n, i + (size_t{1} << 16) * n);
    for (; i < block_end; i += n, p += 3 * n) {
      hn::Vec<decltype(d8)> r8, g8, b8;
      hn::LoadInterleaved3(d8, p, r8, g8, b8);
      acc = hn::Add(acc, Luma(di, hn::PromoteTo(di, r8), hn::PromoteTo(di, g8), hn::PromoteTo(di, b8)));
    }
    sum += static_cast<uint64_t>(hn::GetLane(hn::SumOfLanes(di, acc)));
  }
  for (; i < pixels; ++i, p += 3) sum += pil::luma(p[0], p[1], p[2]);
  return sum;
}

}  // namespace HWY_NAMESPACE
}  // namespace batchd::daemon
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace batchd::daemon {

HWY_EXPORT(BlendImage);
HWY_EXPORT(LumaSum);

void blend_image(RgbImage& img, float alpha, int degenerate) { HWY_DYNAMIC_DISPATCH(BlendImage)(img, alpha, degenerate); }
uint64_t luma_sum(const RgbImage& img) { return HWY_DYNAMIC_DISPATCH(LumaSum)(img); }

}  // namespace batchd::daemon
#endif  // HWY_ONCE
