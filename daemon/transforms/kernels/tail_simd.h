// tail_simd.h — the float32 tail of a spec (fused_tail.h) vectorized with Highway: an RGB uint8 image through a
// chain of to_tensor / normalize steps into float32 CHW planes (or HWC), mirrored as drawn, in one pass.
//
// Bit for bit the scalar table's values (FusedTail::lut, from ops::PointwiseStep): each lane runs the same IEEE
// float32 operations in the same order as torch's (to_tensor: x / 255; normalize: (x - mean[c]) / std[c]; division
// and subtraction are correctly rounded in every SIMD target as in scalar code, and no step is fused into an FMA).
// Pixels past the last full vector of a row are read from the table. Dynamic dispatch over SSE4 / AVX2 / AVX-512
// and a portable fallback, as resample_passes.h.
#pragma once

#include <cstdint>

#include "transforms/kernels/image_decoder.h"

namespace batchd::daemon {

// The float steps after the uint8 -> float conversion, in order (at most kMaxSteps).
struct FloatChain {
  static constexpr int kMaxSteps = 4;
  struct Step {
    bool div255 = false;            // x / 255 (to_tensor, convert_image_dtype uint8 -> float32)
    float mean[3] = {0, 0, 0};      // else (x - mean[c]) / std[c] (normalize)
    float std[3] = {1, 1, 1};
  };
  Step steps[kMaxSteps];
  int count = 0;
};

// dst: 3 planes of width * height floats (CHW), or width * height * 3 floats (hwc). lut: the chain's value for each
// channel and byte (used past the last full vector of a row).
void write_float_chain(const RgbImage& image, bool flip_h, bool flip_v, const FloatChain& chain,
                       const float (&lut)[3][256], bool hwc, float* dst);

}  // namespace batchd::daemon
