#include "transforms/kernels/tensor/erasing.h"

#include <algorithm>
#include <cmath>

#include "transforms/kernels/tensor/random_draws.h"

namespace batchd::daemon {

void erase(float* tensor, const TensorShape& shape, const EraseBox& box, std::span<const float> values) {
  const size_t c_count = static_cast<size_t>(shape.channels);
  const bool elementwise = values.size() > c_count;  // value="random": channels * h * w values
  const bool per_channel = values.size() == c_count && c_count > 1;
  auto value_of = [&](size_t c, size_t y, size_t x) {
    if (elementwise) return values[(c * box.height + y) * box.width + x];
    return per_channel ? values[c] : values[0];
  };
  const size_t width = static_cast<size_t>(shape.width), height = static_cast<size_t>(shape.height);
  if (shape.hwc) {
    for (size_t y = 0; y < static_cast<size_t>(box.height); ++y) {
      float* row = tensor + ((box.top + y) * width + box.left) * c_count;
      for (size_t x = 0; x < static_cast<size_t>(box.width); ++x) {
        for (size_t c = 0; c < c_count; ++c) row[x * c_count + c] = value_of(c, y, x);
      }
    }
    return;
  }
  for (size_t c = 0; c < c_count; ++c) {
    for (size_t y = 0; y < static_cast<size_t>(box.height); ++y) {
      float* row = tensor + (c * height + box.top + y) * width + box.left;
      if (elementwise) {
        std::copy_n(values.data() + (c * box.height + y) * box.width, box.width, row);
      } else {
        std::fill_n(row, box.width, per_channel ? values[c] : values[0]);
      }
    }
  }
}

std::optional<EraseBox> random_erasing_params(const TensorShape& shape, const ErasingParams& params, SampleRng& rng,
                                              std::vector<float>* random_values) {
  const double area = static_cast<double>(shape.height) * shape.width;
  const double log_lo = std::log(params.ratio_lo), log_hi = std::log(params.ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area = area * rng.uniform(params.scale_lo, params.scale_hi);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    // Checked in double before any cast: a drawn aspect of inf or 0 (a ratio near the plan's bounds) gives a side
    // of inf, NaN or 0, and int(inf) is undefined (it was INT_MIN, and erase() then ran for ever over 0-wide rows).
    // torchvision's `if not (h < img_h and w < img_w): continue` rejects the same draws.
    const double hd = std::nearbyint(std::sqrt(erase_area * aspect)), wd = std::nearbyint(std::sqrt(erase_area / aspect));
    if (!(hd >= 0 && wd >= 0 && hd < shape.height && wd < shape.width)) continue;
    const int h = static_cast<int>(hd), w = static_cast<int>(wd);
    if (params.value.kind == EraseValue::Kind::kRandom) {
      random_values->resize(static_cast<size_t>(shape.channels) * h * w);
      fill_normal(rng, random_values->data(), random_values->size());
    }
    EraseBox box;
    box.height = h;
    box.width = w;
    box.top = static_cast<int>(rng.randint(0, shape.height - h));
    box.left = static_cast<int>(rng.randint(0, shape.width - w));
    return box;
  }
  return std::nullopt;
}

std::optional<EraseBox> RandomErasing::apply(float* tensor, const TensorShape& shape, SampleRng& rng) {
  if (!(rng.uniform(0.0, 1.0) < params_.p)) return std::nullopt;
  const auto box = random_erasing_params(shape, params_, rng, &random_values_);
  if (!box) return std::nullopt;
  if (params_.value.kind == EraseValue::Kind::kRandom && params_.round != nullptr) {
    for (float& v : random_values_) v = params_.round(v);
  }
  const std::span<const float> values = params_.value.kind == EraseValue::Kind::kRandom
                                            ? std::span<const float>(random_values_)
                                            : std::span<const float>(params_.value.values);
  erase(tensor, shape, *box, values);
  return box;
}

}  // namespace batchd::daemon
