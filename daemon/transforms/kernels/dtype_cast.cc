// The array conversions of dtype_cast.h: plain loops over the inline forms, vectorized by the compiler (-O3).
#include "transforms/kernels/dtype_cast.h"

namespace batchd::daemon {

void cast_float_to_half(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = float_to_half(in[i]);
}

void cast_half_to_float(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

void cast_float_to_bfloat16(const float* __restrict in, uint16_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = float_to_bfloat16(in[i]);
}

void cast_bfloat16_to_float(const uint16_t* __restrict in, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = bfloat16_to_float(in[i]);
}

void image_float_to_uint8(const float* __restrict in, uint8_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = image_float_to_uint8(in[i]);
}

void image_uint8_to_float(const uint8_t* __restrict in, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = image_uint8_to_float(in[i]);
}

}  // namespace batchd::daemon
