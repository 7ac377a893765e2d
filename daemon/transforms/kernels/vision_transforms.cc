#include "transforms/kernels/vision_transforms.h"

#include <algorithm>
#include <cmath>

namespace batchd::daemon {

SampleRng::SampleRng(uint64_t seed, uint64_t epoch, int64_t index, uint32_t copy) {
  // Mix the keys through SplitMix64 steps so nearby (epoch, index, copy) keys get unrelated streams.
  state_ = seed;
  state_ = next() ^ (epoch * 0xd1b54a32d192ed03ull);
  state_ = next() ^ (static_cast<uint64_t>(index) * 0xabc98388fb8fac03ull);
  if (copy != 0) state_ = next() ^ (uint64_t{copy} * 0x8cb92ba72f3d8dd7ull);  // copy 0: the stream as before
  next();
}

uint64_t SampleRng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SampleRng::uniform(double lo, double hi) {
  return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53);
}

int64_t SampleRng::randint(int64_t lo, int64_t hi) {
  const auto span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(next() % span);  // span is tiny next to 2^64: the bias is negligible
}

CropBox random_resized_crop_params(int width, int height, SampleRng& rng, double scale_lo, double scale_hi,
                                   double ratio_lo, double ratio_hi) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * rng.uniform(scale_lo, scale_hi);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    // Compared in double before the cast: a scale or ratio far outside the image (1e300 is a finite parameter)
    // gives sides past INT_MAX, inf or NaN, whose int is undefined; torchvision's test rejects the same draws.
    const double wd = std::nearbyint(std::sqrt(target_area * aspect)), hd = std::nearbyint(std::sqrt(target_area / aspect));
    if (0 < wd && wd <= width && 0 < hd && hd <= height) {
      const int w = static_cast<int>(wd), h = static_cast<int>(hd);
      const int top = static_cast<int>(rng.randint(0, height - h));
      const int left = static_cast<int>(rng.randint(0, width - w));
      return {left, top, w, h};
    }
  }
  // Fallback to central crop.
  const double in_ratio = static_cast<double>(width) / height;
  int w, h;
  if (in_ratio < ratio_lo) {
    w = width;
    h = static_cast<int>(std::nearbyint(w / ratio_lo));
  } else if (in_ratio > ratio_hi) {
    h = height;
    w = static_cast<int>(std::nearbyint(h * ratio_hi));
  } else {
    w = width;
    h = height;
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

void resize_shorter_side(int width, int height, int size, int* out_width, int* out_height) {
  if (width <= height) {
    *out_width = size;
    *out_height = static_cast<int>(static_cast<int64_t>(size) * height / width);
  } else {
    *out_height = size;
    *out_width = static_cast<int>(static_cast<int64_t>(size) * width / height);
  }
}

int center_crop_offset(int in, int crop) { return static_cast<int>(std::nearbyint((in - crop) / 2.0)); }

}  // namespace batchd::daemon
