// erasing.h — torchvision 0.14's RandomErasing (transforms.RandomErasing, transforms/functional_tensor.erase) on a
// float tensor: the functions, the random parameters, and the whole op as one reusable object.
//
// A tensor here is Sample::tensor: float32 values, channels x height x width in CHW order (HWC when `hwc`); a
// float16/bfloat16 tensor is held as the float32 values of its elements (its final write rounds).
//
// RandomErasing.forward draws, in this order: u ~ U[0, 1), erase iff u < p; then get_params: up to 10 tries of
// erase_area = H*W * U[scale_lo, scale_hi], aspect = exp(U[ln ratio_lo, ln ratio_hi]), h = round(sqrt(area*aspect)),
// w = round(sqrt(area/aspect)) (Python's round: half to even), the first with h < H and w < W wins; then, for
// value="random", C*h*w N(0, 1) values (random_draws.h); then i = randint(0, H - h), j = randint(0, W - w). If no
// try fits, get_params returns (0, 0, H, W, img) and erase writes the image over itself: the image is unchanged.
// F.erase sets img[..., i:i+h, j:j+w] = v: one value for every channel (value=number), one per channel
// (value=[r, g, b]), or one per element (value="random", in CHW order).
// Deviation: torchvision draws the area and aspect in float32 (torch.empty(1).uniform_, ln of a float32 tensor);
// batchd in double. The (i, j, h, w) distributions agree (tests/ops/test_tensor.py, Kolmogorov-Smirnov).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon {

// F.erase's region: rows [top, top + height), columns [left, left + width) (torchvision's i, j, h, w).
struct EraseBox {
  int top = 0, left = 0, height = 0, width = 0;
};

// The layout of a tensor (Sample's channels, height, width; hwc after layout(order="HWC")).
struct TensorShape {
  int channels = 3, height = 0, width = 0;
  bool hwc = false;
};

// What an erased box is filled with (RandomErasing's `value`).
struct EraseValue {
  enum class Kind { kConstant, kPerChannel, kRandom };
  Kind kind = Kind::kConstant;
  std::vector<float> values = {0.0f};  // kConstant: 1 value; kPerChannel: one per channel; kRandom: none
};

struct ErasingParams {
  double p = 0.5;
  double scale_lo = 0.02, scale_hi = 0.33;
  double ratio_lo = 0.3, ratio_hi = 3.3;
  EraseValue value;
  // The tensor's rounding of a float32 value (float16 / bfloat16: torch rounds what is assigned into it); null for
  // float32. Applied to the constant values once and to each random draw.
  float (*round)(float) = nullptr;
};

// F.erase(img, i, j, h, w, v) in place. `values`: 1 (every element), channels (per channel) or
// channels*height*width (element-wise, CHW order, as v of value="random"). The box must lie inside the tensor.
void erase(float* tensor, const TensorShape& shape, const EraseBox& box, std::span<const float> values);

// RandomErasing.get_params: the box, or nullopt when none of the 10 tries fits. With value kRandom it fills
// `random_values` (resized to channels*h*w, capacity kept) with N(0, 1) draws between the size and the position,
// where torchvision draws them.
std::optional<EraseBox> random_erasing_params(const TensorShape& shape, const ErasingParams& params, SampleRng& rng,
                                              std::vector<float>* random_values);

// The whole op for one worker and stream: the p draw, get_params, erase. Not thread-safe; allocates only while the
// random-value buffer grows to the largest box.
class RandomErasing {
 public:
  explicit RandomErasing(ErasingParams params) : params_(std::move(params)) {
    if (params_.round != nullptr) {
      for (float& v : params_.value.values) v = params_.round(v);
    }
  }
  // Erases (or not) `tensor` in place; returns the box erased, nullopt when the p draw or every try said no.
  // kPerChannel values must number shape.channels (the plan checks it).
  std::optional<EraseBox> apply(float* tensor, const TensorShape& shape, SampleRng& rng);

 private:
  ErasingParams params_;
  std::vector<float> random_values_;
};

}  // namespace batchd::daemon
