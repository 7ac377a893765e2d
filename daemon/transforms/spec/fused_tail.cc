#include "transforms/spec/fused_tail.h"

#include <cstring>

#include "transforms/kernels/dtype_cast.h"
#include "transforms/ops/tensor_ops.h"

namespace batchd::daemon {

bool find_tail(const google::protobuf::RepeatedPtrField<wire::Op>& o, FusedTail* tail) {
  int conv = -1;
  for (int i = 0; i < o.size(); ++i) {
    if (o[i].name() == "to_tensor" || o[i].name() == "pil_to_tensor") conv = i;
  }
  if (conv < 0) return false;
  int first = conv;
  while (first > 0 && (o[first - 1].name() == "horizontal_flip" || o[first - 1].name() == "vertical_flip")) --first;
  for (int i = first; i < conv; ++i) tail->flips.push_back({o[i].name() == "horizontal_flip", ops::number(o[i], "p")});
  std::vector<ops::PointwiseStep> steps;
  wire::DType dtype = wire::UINT8;
  bool reduced = false;  // a step on float16 / bfloat16 values (rounds each result): the table only
  int end = conv;
  for (; end < o.size() && ops::is_pointwise(o[end]) && (end == conv || o[end].name() == "normalize" ||
                                                        o[end].name() == "convert_image_dtype"); ++end) {
    steps.push_back(ops::pointwise_step(o[end], dtype));
    dtype = steps.back().out;
    reduced |= dtype == wire::FLOAT16 || dtype == wire::BFLOAT16;
  }
  if (end + 1 == o.size() && o[end].name() == "layout") {
    tail->hwc = ops::text(o[end], "order") == "HWC";
    ++end;
  }
  tail->first = first;
  tail->end = end;
  tail->to_slot = end == o.size();
  tail->dtype = dtype;
  tail->vector_float = dtype == wire::FLOAT32 && !reduced && steps.size() <= FloatChain::kMaxSteps;
  for (const auto& step : steps) {
    using Fn = ops::PointwiseStep::Fn;
    if (step.fn == Fn::kIdentity) continue;
    if (step.fn != Fn::kDiv255 && step.fn != Fn::kNormalize) tail->vector_float = false;
    if (!tail->vector_float) break;
    FloatChain::Step& s = tail->chain.steps[tail->chain.count++];
    s.div255 = step.fn == Fn::kDiv255;
    for (int c = 0; c < 3; ++c) s.mean[c] = step.mean[c], s.std[c] = step.std[c];
  }
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      float x = static_cast<float>(v);
      for (const auto& step : steps) x = step(c, x);
      tail->lut[c][v] = x;
      tail->bits[c][v] = dtype == wire::FLOAT16 ? float_to_half(x) : dtype == wire::BFLOAT16 ? float_to_bfloat16(x) : 0;
    }
  }
  return true;
}

void write_tensor(const std::vector<float>& values, wire::DType dtype, char* dst) {
  switch (dtype) {
    case wire::FLOAT32:
      std::memcpy(dst, values.data(), values.size() * sizeof(float));
      return;
    case wire::FLOAT16:  // the values are float16's already: the cast is exact
      cast_float_to_half(values.data(), reinterpret_cast<uint16_t*>(dst), values.size());
      return;
    case wire::BFLOAT16:
      cast_float_to_bfloat16(values.data(), reinterpret_cast<uint16_t*>(dst), values.size());
      return;
    default: {
      auto* out = reinterpret_cast<uint8_t*>(dst);
      for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<uint8_t>(values[i]);
    }
  }
}

}  // namespace batchd::daemon
