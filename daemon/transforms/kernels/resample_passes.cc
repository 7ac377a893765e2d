// resample_passes.cc — see resample_passes.h. Highway's foreach_target compiles this file once per target; the
// dispatch at the end picks the best the CPU supports.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "transforms/kernels/resample_passes.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "transforms/kernels/resample_passes.h"

#ifndef BATCHD_RESAMPLE_PASSES_ONCE
#define BATCHD_RESAMPLE_PASSES_ONCE
namespace batchd::daemon::passes {

constexpr int kPrecisionBits = 22;  // Pillow's PRECISION_BITS for 8-bit images (32 - 8 - 2)
constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

inline uint8_t clip8(int32_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One row of the horizontal pass, one tap at a time (reads only the taps' bytes).
inline void horizontal_row(const uint8_t* row, const PassTaps& cx, int x_shift, int out_w, uint8_t* o) {
  for (int i = 0; i < out_w; ++i) {
    const uint8_t* p = row + static_cast<size_t>(cx.bounds[2 * i] - x_shift) * 3;
    const int32_t* k = cx.taps + static_cast<size_t>(i) * cx.ksize;
    int32_t r = kHalf, g = kHalf, b = kHalf;
    for (int t = 0; t < cx.bounds[2 * i + 1]; ++t, p += 3) {
      r += p[0] * k[t];
      g += p[1] * k[t];
      b += p[2] * k[t];
    }
    o[3 * i] = clip8(r);
    o[3 * i + 1] = clip8(g);
    o[3 * i + 2] = clip8(b);
  }
}

// pshufb indices: tap u (0..4) of a 16-byte window -> the int32 lanes R, G, B, 0 (0x80 zeroes a byte).
alignas(16) constexpr uint8_t kPick[5][16] = {
    {0, 128, 128, 128, 1, 128, 128, 128, 2, 128, 128, 128, 128, 128, 128, 128},
    {3, 128, 128, 128, 4, 128, 128, 128, 5, 128, 128, 128, 128, 128, 128, 128},
    {6, 128, 128, 128, 7, 128, 128, 128, 8, 128, 128, 128, 128, 128, 128, 128},
    {9, 128, 128, 128, 10, 128, 128, 128, 11, 128, 128, 128, 128, 128, 128, 128},
    {12, 128, 128, 128, 13, 128, 128, 128, 14, 128, 128, 128, 128, 128, 128, 128}};
// RGBX RGBX ... -> RGB RGB ... (the first 3/4 of the bytes).
alignas(16) constexpr uint8_t kCompact[16] = {0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 128, 128, 128, 128};

}  // namespace batchd::daemon::passes
#endif  // BATCHD_RESAMPLE_PASSES_ONCE

HWY_BEFORE_NAMESPACE();
namespace batchd::daemon {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void VerticalPass(const uint8_t* in, size_t in_stride, size_t width, const PassTaps& cy, int y_shift, int out_rows,
                  uint8_t* out) {
  const hn::ScalableTag<int32_t> d;
  const hn::Rebind<uint8_t, decltype(d)> d8;  // as many bytes as d has int32 lanes
  const size_t n_lanes = hn::Lanes(d);
  const auto half = hn::Set(d, passes::kHalf);
  for (int j = 0; j < out_rows; ++j) {
    const uint8_t* first = in + static_cast<size_t>(cy.bounds[2 * j] - y_shift) * in_stride;
    const int n = cy.bounds[2 * j + 1];
    const int32_t* k = cy.taps + static_cast<size_t>(j) * cy.ksize;
    uint8_t* o = out + static_cast<size_t>(j) * width;
    size_t x = 0;
    for (; x + 4 * n_lanes <= width; x += 4 * n_lanes) {  // four vectors at a time: the taps' loads overlap
      auto a0 = half, a1 = half, a2 = half, a3 = half;
      const uint8_t* p = first + x;
      for (int t = 0; t < n; ++t, p += in_stride) {
        const auto w = hn::Set(d, k[t]);
        a0 = hn::Add(a0, hn::Mul(hn::PromoteTo(d, hn::LoadU(d8, p)), w));
        a1 = hn::Add(a1, hn::Mul(hn::PromoteTo(d, hn::LoadU(d8, p + n_lanes)), w));
        a2 = hn::Add(a2, hn::Mul(hn::PromoteTo(d, hn::LoadU(d8, p + 2 * n_lanes)), w));
        a3 = hn::Add(a3, hn::Mul(hn::PromoteTo(d, hn::LoadU(d8, p + 3 * n_lanes)), w));
      }
      // DemoteTo saturates to [0, 255]: clip8().
      hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<passes::kPrecisionBits>(a0)), d8, o + x);
      hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<passes::kPrecisionBits>(a1)), d8, o + x + n_lanes);
      hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<passes::kPrecisionBits>(a2)), d8, o + x + 2 * n_lanes);
      hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<passes::kPrecisionBits>(a3)), d8, o + x + 3 * n_lanes);
    }
    for (; x + n_lanes <= width; x += n_lanes) {
      auto a = half;
      const uint8_t* p = first + x;
      for (int t = 0; t < n; ++t, p += in_stride) {
        a = hn::Add(a, hn::Mul(hn::PromoteTo(d, hn::LoadU(d8, p)), hn::Set(d, k[t])));
      }
      hn::StoreU(hn::DemoteTo(d8, hn::ShiftRight<passes::kPrecisionBits>(a)), d8, o + x);
    }
    for (; x < width; ++x) {
      int32_t a = passes::kHalf;
      for (int t = 0; t < n; ++t) a += first[static_cast<size_t>(t) * in_stride + x] * k[t];
      o[x] = passes::clip8(a);
    }
  }
}

#if HWY_TARGET != HWY_SCALAR
// The 16-byte windows at row + offs[b] + add, one per 128-bit block of a byte vector.
template <class D8>
HWY_INLINE hn::Vec<D8> LoadWindows(D8 d8, const uint8_t* row, const int32_t* offs, int add) {
  if constexpr (hn::MaxLanes(d8) <= 16) {
    return hn::LoadU(d8, row + offs[0] + add);
  } else {
    const hn::Half<D8> dh;
    constexpr size_t kHalfBlocks = hn::MaxLanes(dh) / 16;
    return hn::Combine(d8, LoadWindows(dh, row, offs + kHalfBlocks, add), LoadWindows(dh, row, offs, add));
  }
}
#endif

// Each 128-bit block of a vector computes one output pixel: its int32 lanes R, G, B, (unused). Per tap, one pshufb
// takes the tap's 3 bytes from the pixel's 16-byte window (5 taps per window) zero-extended into the lanes.
void HorizontalPass(const uint8_t* in, size_t in_stride, const uint8_t* in_end, int rows, const PassTaps& cx,
                    int x_shift, int out_w, uint8_t* out) {
#if HWY_TARGET == HWY_SCALAR
  for (int r = 0; r < rows; ++r) {
    passes::horizontal_row(in + r * in_stride, cx, x_shift, out_w, out + static_cast<size_t>(r) * out_w * 3);
  }
#else
  const hn::ScalableTag<int32_t> d;
  const hn::Repartition<uint8_t, decltype(d)> d8;  // the same vector as bytes
  const hn::Rebind<uint8_t, decltype(d)> dq;       // a quarter: one byte per int32 lane
  const int n_lanes = static_cast<int>(hn::Lanes(d)), px = n_lanes / 4, groups = (out_w + px - 1) / px;
  // The plan, per group of px output pixels: each pixel's window offset, the group's tap count, and per tap one
  // vector of weights ({k, k, k, 0} per pixel; 0 past a pixel's own count, so a wider neighbour adds nothing).
  thread_local std::vector<int32_t> offs, counts, weights;
  offs.resize(static_cast<size_t>(groups) * px);
  counts.resize(groups);
  weights.assign(static_cast<size_t>(groups) * cx.ksize * n_lanes, 0);
  size_t reach = 0;  // bytes a row's windows read from its start
  for (int g = 0; g < groups; ++g) {
    int n_max = 0;
    for (int b = 0; b < px; ++b) {
      const int i = std::min(g * px + b, out_w - 1), n = g * px + b < out_w ? cx.bounds[2 * i + 1] : 0;
      offs[static_cast<size_t>(g) * px + b] = (cx.bounds[2 * i] - x_shift) * 3;
      n_max = std::max(n_max, n);
      for (int t = 0; t < n; ++t) {
        int32_t* w = &weights[(static_cast<size_t>(g) * cx.ksize + t) * n_lanes + 4 * b];
        w[0] = w[1] = w[2] = cx.taps[static_cast<size_t>(i) * cx.ksize + t];
      }
    }
    counts[g] = n_max;
    for (int b = 0; b < px; ++b) {
      const int last_window = std::max(0, (n_max - 1) / 5) * 15;
      reach = std::max(reach, static_cast<size_t>(offs[static_cast<size_t>(g) * px + b] + last_window + 16));
    }
  }
  hn::Vec<decltype(d8)> pick[5];
  for (int u = 0; u < 5; ++u) pick[u] = hn::LoadDup128(d8, passes::kPick[u]);
  const auto compact = hn::LoadU(dq, passes::kCompact);
  const auto half = hn::Set(d, passes::kHalf);
  uint8_t* const out_end = out + static_cast<size_t>(rows) * out_w * 3;
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = in + static_cast<size_t>(r) * in_stride;
    uint8_t* out_row = out + static_cast<size_t>(r) * out_w * 3;
    if (row + reach > in_end) {
      passes::horizontal_row(row, cx, x_shift, out_w, out_row);
      continue;
    }
    for (int g = 0; g < groups; ++g) {
      const int32_t* off = &offs[static_cast<size_t>(g) * px];
      const int32_t* w = &weights[static_cast<size_t>(g) * cx.ksize * n_lanes];
      const int n = counts[g];
      auto acc = half;
      for (int t = 0, add = 0; t < n; add += 15) {
        const auto window = LoadWindows(d8, row, off, add);
        for (int u = 0; u < 5 && t < n; ++u, ++t, w += n_lanes) {
          const auto pixel = hn::BitCast(d, hn::TableLookupBytesOr0(window, pick[u]));
          acc = hn::Add(acc, hn::Mul(pixel, hn::LoadU(d, w)));
        }
      }
      const auto rgb = hn::TableLookupBytes(hn::DemoteTo(dq, hn::ShiftRight<passes::kPrecisionBits>(acc)), compact);
      uint8_t* o = out_row + static_cast<size_t>(g) * px * 3;
      const int valid = std::min(px, out_w - g * px);
      if (valid == px && o + n_lanes <= out_end) {
        hn::StoreU(rgb, dq, o);  // its last quarter is garbage: the next group (or row) overwrites it
      } else {
        alignas(64) uint8_t tmp[64];
        hn::StoreU(rgb, dq, tmp);
        std::memcpy(o, tmp, static_cast<size_t>(valid) * 3);
      }
    }
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace batchd::daemon
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace batchd::daemon {

HWY_EXPORT(VerticalPass);
HWY_EXPORT(HorizontalPass);

void vertical_pass(const uint8_t* in, size_t in_stride, size_t width_bytes, const PassTaps& cy, int y_shift,
                   int out_rows, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(VerticalPass)(in, in_stride, width_bytes, cy, y_shift, out_rows, out);
}

void horizontal_pass(const uint8_t* in, size_t in_stride, const uint8_t* in_end, int rows, const PassTaps& cx,
                     int x_shift, int out_w, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(HorizontalPass)(in, in_stride, in_end, rows, cx, x_shift, out_w, out);
}

}  // namespace batchd::daemon
#endif
