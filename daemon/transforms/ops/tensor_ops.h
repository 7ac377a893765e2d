// tensor_ops.h — the tensor conversions and per-value tensor ops (tensor_ops.cc): to_tensor, pil_to_tensor,
// convert_image_dtype, normalize, layout. Each of the first four maps every value independently, per channel: the
// executor composes a run of them into one table per channel (3 x 256 entries for a uint8 image), applied while
// the image is written into the slot (fused_tail.h).
#pragma once

#include "transforms/ops/op.h"

namespace batchd::daemon::ops {

// How a tensor of dtype `d` rounds a float32 value assigned to it: round_to_half / round_to_bfloat16
// (dtype_cast.h) for float16 / bfloat16, null for a dtype that holds the value as it is (float32; uint8 values are
// whole already).
using Rounding = float (*)(float);
Rounding rounding_of(wire::DType d);

// True for the ops PointwiseStep computes.
bool is_pointwise(const wire::Op& op);

// One pointwise op, compiled: the value `x` of channel `c` after it, in torch's float32 arithmetic: to_tensor
// x / 255; pil_to_tensor x; convert_image_dtype uint8 -> float x / 255, float -> uint8 x * (255 + 1 - 1e-3) cast as
// torch casts (truncated, low byte kept: values outside [0, 1] wrap, dtype_cast.h), float -> float x;
// normalize (x - mean[c]) / std[c]. On a float16 / bfloat16 tensor every result is rounded to that dtype as torch
// rounds each op's float32 result (normalize's mean and std too, and its difference before the division); a value
// of such a tensor is kept as the float32 it rounds to.
struct PointwiseStep {
  enum class Fn { kIdentity, kDiv255, kToUint8, kNormalize } fn = Fn::kIdentity;
  float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
  wire::DType in = wire::UINT8;   // the element type before the op (an image counts as UINT8)
  wire::DType out = wire::UINT8;  // the element type after the op
  float operator()(int c, float x) const;
};
// `in`: the element type before the op (an image counts as UINT8).
PointwiseStep pointwise_step(const wire::Op& op, wire::DType in);

}  // namespace batchd::daemon::ops
