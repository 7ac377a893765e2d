// blend_simd.h — Pillow's Blend.c (ImagingBlend) of every value of an RGB image with a degenerate, and the sum of
// its L conversion, on SIMD vectors (internal to color/: enhance.cc's brightness, contrast and saturation).
//
// Bit for bit pil::Blend and pil::luma (pil_pixel.h): each lane runs the same float32 operations in the same order,
// d + alpha * (v - d) with no fused multiply-add (this file is compiled with -ffp-contract=off), clipped to
// [0, 255] and truncated; luma in the same 16-bit fixed point. Pixels past the last full vector take the scalar
// forms. Dynamic dispatch over SSE4 / AVX2 / AVX-512 and a portable fallback, as transforms/kernels/tail_simd.h.
#pragma once

#include <cstdint>

#include "transforms/kernels/resample.h"

namespace batchd::daemon {

// Every channel value v of `img` becomes Blend(d, v) with alpha = float(factor): d = `degenerate` (0..255) for
// every pixel, or the pixel's own L value (Convert.c rgb2l) when `degenerate` is kPerPixelLuma.
inline constexpr int kPerPixelLuma = -1;
void blend_image(RgbImage& img, float alpha, int degenerate);

// The sum of L over every pixel of `img` (ImageStat's mean of the L image is this / width * height).
uint64_t luma_sum(const RgbImage& img);

}  // namespace batchd::daemon
