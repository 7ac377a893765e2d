// Compiled with -ffp-contract=off (daemon/CMakeLists.txt): a * x + b * y must round each product as torch does,
// never fuse into an FMA.
#include "transforms/kernels/tensor/mixup.h"

#include <cmath>
#include <cstring>

#include "batchd/wire/convert.h"
#include "transforms/kernels/dtype_cast.h"
#include "transforms/kernels/tensor/random_draws.h"

namespace batchd::daemon {

namespace {

// How torch 2.15 computes in each image dtype: load to float, store rounding to the dtype; a Python scalar is
// converted to float and used as it is (ATen's opmath type; torch 1.13 rounded it to the dtype first).
struct Float32 {
  using T = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};
struct Float16 {
  using T = uint16_t;
  static float load(uint16_t v) { return half_to_float(v); }
  static uint16_t store(float v) { return float_to_half(v); }
};
struct BFloat16 {
  using T = uint16_t;
  static float load(uint16_t v) { return bfloat16_to_float(v); }
  static uint16_t store(float v) { return float_to_bfloat16(v); }
};

template <class E>
float scalar_in(double s) {
  return static_cast<float>(s);
}

// x = round(round(x * a) + round(y * b)), element by element.
template <class E>
void mix_into(typename E::T* __restrict x, const typename E::T* __restrict y, size_t n, float a, float b) {
  for (size_t k = 0; k < n; ++k) {
    const float xa = E::load(E::store(E::load(x[k]) * a));
    const float yb = E::load(E::store(E::load(y[k]) * b));
    x[k] = E::store(xa + yb);
  }
}

template <class E>
void mixup_typed(ops::BatchView& batch, double lambda, std::vector<std::byte>* scratch) {
  using T = typename E::T;
  const size_t n = batch.image_sample_values;
  T* images = static_cast<T*>(batch.images);
  const float a = scalar_in<E>(lambda), b = scalar_in<E>(1.0 - lambda);
  scratch->resize(n * sizeof(T));
  T* last = reinterpret_cast<T*>(scratch->data());  // sample B - 1 before it is mixed: sample 0's partner
  std::memcpy(last, images + (batch.samples - 1) * n, n * sizeof(T));
  for (size_t i = batch.samples - 1; i >= 1; --i) mix_into<E>(images + i * n, images + (i - 1) * n, n, a, b);
  mix_into<E>(images, last, n, a, b);
}

size_t element_size(wire::DType dtype) { return dtype == wire::FLOAT32 ? 4 : 2; }

// Copies the box of sample `src` onto sample `dst` (each one sample of `batch`'s layout).
void copy_box(std::byte* dst, const std::byte* src, const ops::BatchView& batch, const CutmixBox& box) {
  const size_t elem = element_size(batch.image_dtype);
  const size_t c_count = static_cast<size_t>(batch.channels), width = static_cast<size_t>(batch.width);
  const size_t height = static_cast<size_t>(batch.height), cols = static_cast<size_t>(box.x2 - box.x1);
  if (cols == 0) return;
  if (batch.hwc) {
    for (size_t y = box.y1; y < static_cast<size_t>(box.y2); ++y) {
      const size_t at = (y * width + box.x1) * c_count * elem;
      std::memcpy(dst + at, src + at, cols * c_count * elem);
    }
    return;
  }
  for (size_t c = 0; c < c_count; ++c) {
    for (size_t y = box.y1; y < static_cast<size_t>(box.y2); ++y) {
      const size_t at = ((c * height + y) * width + box.x1) * elem;
      std::memcpy(dst + at, src + at, cols * elem);
    }
  }
}

bool float_dtype(wire::DType dtype) {
  return dtype == wire::FLOAT32 || dtype == wire::FLOAT16 || dtype == wire::BFLOAT16;
}

Status check_batch(const ops::BatchView& batch, const char* op) {
  if (!float_dtype(batch.image_dtype)) {
    return Error(ErrorCode::kInvalidArgument,
                 std::string(op) + " needs a float32, float16 or bfloat16 image tensor, not " +
                     wire::dtype_name(batch.image_dtype) + ": put it after to_tensor or convert_image_dtype");
  }
  return ok_status();
}

}  // namespace

CutmixBox cutmix_box(int width, int height, double lambda, int r_x, int r_y) {
  const double r = 0.5 * std::sqrt(1.0 - lambda);
  const int r_w_half = static_cast<int>(r * width), r_h_half = static_cast<int>(r * height);
  CutmixBox box;
  box.x1 = std::max(r_x - r_w_half, 0);
  box.y1 = std::max(r_y - r_h_half, 0);
  box.x2 = std::min(r_x + r_w_half, width);
  box.y2 = std::min(r_y + r_h_half, height);
  box.lambda = 1.0 - static_cast<double>(box.x2 - box.x1) * (box.y2 - box.y1) / (static_cast<double>(width) * height);
  return box;
}

void mixup_images(ops::BatchView& batch, double lambda, std::vector<std::byte>* scratch) {
  if (batch.samples == 0) return;
  switch (batch.image_dtype) {
    case wire::FLOAT16: return mixup_typed<Float16>(batch, lambda, scratch);
    case wire::BFLOAT16: return mixup_typed<BFloat16>(batch, lambda, scratch);
    default: return mixup_typed<Float32>(batch, lambda, scratch);
  }
}

void cutmix_images(ops::BatchView& batch, const CutmixBox& box, std::vector<std::byte>* scratch) {
  if (batch.samples == 0) return;
  const size_t sample_bytes = batch.image_sample_values * element_size(batch.image_dtype);
  auto* images = static_cast<std::byte*>(batch.images);
  scratch->resize(sample_bytes);
  std::memcpy(scratch->data(), images + (batch.samples - 1) * sample_bytes, sample_bytes);
  for (size_t i = batch.samples - 1; i >= 1; --i) {
    copy_box(images + i * sample_bytes, images + (i - 1) * sample_bytes, batch, box);
  }
  copy_box(images, scratch->data(), batch, box);
}

void mix_labels(ops::BatchView& batch, double lambda, std::vector<float>* scratch) {
  if (batch.samples == 0) return;
  const size_t k = static_cast<size_t>(batch.num_classes);
  const float a = static_cast<float>(lambda), b = static_cast<float>(1.0 - lambda);
  scratch->assign(batch.labels + (batch.samples - 1) * k, batch.labels + batch.samples * k);
  for (size_t i = batch.samples - 1; i >= 1; --i) {
    mix_into<Float32>(batch.labels + i * k, batch.labels + (i - 1) * k, k, a, b);
  }
  mix_into<Float32>(batch.labels, scratch->data(), k, a, b);
}

Status MixKernel::run(ops::BatchView& batch, SampleRng& rng) {
  BATCHD_RETURN_IF_ERROR(check_batch(batch, mode_ == Mode::kMixup ? "mixup" : "cutmix"));
  if (rng.uniform(0.0, 1.0) < params_.p) {
    double lambda = beta_draw(rng, params_.alpha, params_.alpha);
    if (mode_ == Mode::kMixup) {
      mixup_images(batch, lambda, &image_scratch_);
    } else {
      const int r_x = static_cast<int>(rng.randint(0, batch.width - 1));
      const int r_y = static_cast<int>(rng.randint(0, batch.height - 1));
      const CutmixBox box = cutmix_box(batch.width, batch.height, lambda, r_x, r_y);
      cutmix_images(batch, box, &image_scratch_);
      lambda = box.lambda;
    }
    mix_labels(batch, lambda, &label_scratch_);
  }
  return ok_status();
}

}  // namespace batchd::daemon
