// dtype_cast.h — the element conversions of the tensor ops, bit for bit as torch 2.15 does them on x86-64 CPUs
// (the project venv's; tests/ops/test_dtype_cast.py compares them with torch over millions of values).
//
// float32 -> float16: round to nearest even; overflow -> +-inf; NaN -> quiet NaN with the sign and the top 10
//   mantissa bits kept (sign | 0x7E00 | (bits >> 13) & 0x3FF: x86's F16C conversion, what Tensor.to(torch.float16)
//   gives in torch 2.15; torch 1.13 gave 0x7E00 with the sign). Otherwise c10::Half(float), i.e.
//   fp16_ieee_from_fp32_value of c10/util/Half.h (from the FP16 library): the float arithmetic below does the
//   rounding (scale into the float16 range, add a bias that moves the rounding point to float16's last mantissa bit,
//   take the bits).
// float16 -> float32: exact (c10/util/Half.h fp16_ieee_to_fp32_value).
// float32 -> bfloat16: round to nearest even: (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16, as c10/util/BFloat16.h
//   round_to_nearest_even; NaN -> 0xFFFF, as ATen's AVX2 cvtfp32_bf16 (aten/src/ATen/cpu/vec/vec256/
//   vec256_bfloat16.h), the path Tensor.to(torch.bfloat16) takes here (the scalar c10 form would give 0x7FC0).
// bfloat16 -> float32: exact (bits << 16).
// float32 image -> uint8 image: torchvision 0.14 ConvertImageDtype (functional_tensor.convert_image_dtype):
//   image.mul(255 + 1.0 - 1e-3).to(torch.uint8): the product in float32 (255.999 rounded to float), then c10's cast
//   to uint8 through int64 (c10/util/TypeCast.h: static_cast<uint8_t>(static_cast<int64_t>(v))): truncation toward
//   zero, then the low byte (so -0.5 -> 0, -1.5 -> 255, 1.2 -> 51, 300 -> 44). NaN, inf and |v| >= 2^31 give 0, as
//   on x86 (such values are multiples of 256, or the cast's "indefinite integer" 0x80..0).
// uint8 image -> float: torchvision 0.14 ConvertImageDtype / ToTensor: image.to(dtype) / 255, the quotient in
//   float32 (a division: multiplying by 1/255 differs in 126 of the 256 values), then rounded to float16 / bfloat16
//   for those dtypes (torch computes reduced-precision division in float: equal for all 256 inputs).
//
// The inline scalar forms are branch-free (selects), so the array loops in dtype_cast.cc vectorize (-O3, SSE2).
// They assume IEEE float32 arithmetic without flush-to-zero (never built with -ffast-math).
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace batchd::daemon {

inline uint16_t float_to_half(float f) {
  const float scale_to_inf = 0x1.0p+112f, scale_to_zero = 0x1.0p-110f;
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;  // overflow to inf, keep the rest
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;  // without the sign
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;  // the exponent
  bias = bias < 0x71000000u ? 0x71000000u : bias;  // subnormal float16 results share the smallest exponent
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;  // rounds at float16's last mantissa bit
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
  const uint32_t nan = 0x7E00u | ((w >> 13) & 0x03FFu);  // quiet, payload's top bits kept
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? nan : nonsign));
}

inline float half_to_float(uint16_t h) {
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  // Normal (and inf/NaN): move exponent and mantissa into place, rebias by scaling with 2^-112.
  const float normalized = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  // Subnormal: the mantissa as the low bits of 0.5's significand, minus 0.5.
  const float denormalized = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t magnitude = two_w < (1u << 27) ? std::bit_cast<uint32_t>(denormalized)
                                                : std::bit_cast<uint32_t>(normalized);
  return std::bit_cast<float>(sign | magnitude);
}

inline uint16_t float_to_bfloat16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(f != f ? 0xFFFFu : rounded);
}

inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// The value a float32 takes when stored as float16 / bfloat16 (what a torch op on such a tensor rounds to).
inline float round_to_half(float f) { return half_to_float(float_to_half(f)); }
inline float round_to_bfloat16(float f) { return bfloat16_to_float(float_to_bfloat16(f)); }

// torch's cast of a float32 to uint8 (through int64, see above), for any input.
inline uint8_t float_to_uint8_cast(float v) {
  const int32_t i = std::fabs(v) < 2147483648.0f ? static_cast<int32_t>(v) : 0;
  return static_cast<uint8_t>(i);
}

// ConvertImageDtype's factor for float -> uint8: float(255 + 1.0 - 1e-3).
inline constexpr float kFloatToUint8Scale = static_cast<float>(255 + 1.0 - 1e-3);

inline uint8_t image_float_to_uint8(float v) { return float_to_uint8_cast(v * kFloatToUint8Scale); }
inline float image_uint8_to_float(uint8_t v) { return static_cast<float>(v) / 255.0f; }

// Array forms of the above (n elements; in and out must not overlap).
void cast_float_to_half(const float* in, uint16_t* out, size_t n);
void cast_half_to_float(const uint16_t* in, float* out, size_t n);
void cast_float_to_bfloat16(const float* in, uint16_t* out, size_t n);
void cast_bfloat16_to_float(const uint16_t* in, float* out, size_t n);
void image_float_to_uint8(const float* in, uint8_t* out, size_t n);
void image_uint8_to_float(const uint8_t* in, float* out, size_t n);

}  // namespace batchd::daemon
