// pil_pixel.h — Pillow 9.4's per-pixel arithmetic that several color functions share (internal to color/).
//
// Written operand by operand as Pillow's C writes it (float where Pillow has float, double where it promotes):
// color/*.cc is compiled with -ffp-contract=off so that no multiply-add is fused, as Debian's Pillow build (baseline
// x86-64, no FMA) does not fuse either.
#pragma once

#include <cstdint>

namespace batchd::daemon::pil {

// Convert.c rgb2l (L24): ITU-R 601-2 luma in 16-bit fixed point, rounded.
inline uint8_t luma(int r, int g, int b) {
  return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
}

// Blend.c ImagingBlend(im1 = degenerate, im2 = image, alpha): in1 + alpha * (in2 - in1) in float, truncated to uint8;
// outside [0, 1] (extrapolation) the float is clipped to [0, 255] first. `alpha` is the Python factor cast to
// float, as _imaging.c's _blend does.
class Blend {
 public:
  explicit Blend(double factor) : alpha_(static_cast<float>(factor)), interpolate_(alpha_ >= 0 && alpha_ <= 1.0) {}
  // Blend.c's shortcuts: alpha 0 copies the degenerate, alpha 1 the image (the formula gives the same bytes).
  bool is_identity() const { return alpha_ == 1.0f; }
  uint8_t operator()(int degenerate, int value) const {
    const float temp = static_cast<float>(degenerate) + alpha_ * static_cast<float>(value - degenerate);
    if (interpolate_) return static_cast<uint8_t>(temp);
    if (!(temp > 0.0f)) return 0;  // Blend.c's temp <= 0.0, and a NaN factor (never given: factors are finite)
    if (temp >= 255.0f) return 255;
    return static_cast<uint8_t>(temp);
  }

 private:
  float alpha_;
  bool interpolate_;
};

}  // namespace batchd::daemon::pil
