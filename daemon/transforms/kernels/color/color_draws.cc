#include "transforms/kernels/color/color_draws.h"

#include <algorithm>
#include <utility>

#include "transforms/kernels/color/color.h"

namespace batchd::daemon {

double uniform_float(SampleRng& rng, double lo, double hi) {
  // ATen's uniform_real_distribution<float> (TransformationHelper.h uniform_real, float accumulation):
  // x = (24 random bits) * 2^-24, then x * (to - from) + from in float, from and to cast to float first.
  const float x = static_cast<float>(rng.next() >> 40) * 0x1.0p-24f;
  const auto from = static_cast<float>(lo), to = static_cast<float>(hi);
  const float product = x * (to - from);
  return product + from;
}

FactorRange color_jitter_range(const std::array<double, 2>& range, double center) {
  if (range[0] == center && range[1] == center) return std::nullopt;
  return range;
}

FactorRange color_jitter_range(double n, double center, bool clip_low) {
  std::array<double, 2> range{center - n, center + n};
  if (clip_low) range[0] = std::max(range[0], 0.0);
  return color_jitter_range(range, center);
}

ColorJitterDraw draw_color_jitter(const ColorJitterRanges& ranges, SampleRng& rng) {
  ColorJitterDraw draw;
  // torch.randperm(4): a uniform permutation (Fisher-Yates).
  for (int i = 3; i > 0; --i) std::swap(draw.order[i], draw.order[rng.randint(0, i)]);
  const auto factor = [&rng](const FactorRange& range) -> std::optional<double> {
    if (!range) return std::nullopt;
    return uniform_float(rng, (*range)[0], (*range)[1]);
  };
  draw.brightness = factor(ranges.brightness);
  draw.contrast = factor(ranges.contrast);
  draw.saturation = factor(ranges.saturation);
  draw.hue = factor(ranges.hue);
  return draw;
}

void apply_color_jitter(RgbImage& img, const ColorJitterDraw& draw) {
  for (const int fn : draw.order) {
    if (fn == 0 && draw.brightness) adjust_brightness(img, *draw.brightness);
    if (fn == 1 && draw.contrast) adjust_contrast(img, *draw.contrast);
    if (fn == 2 && draw.saturation) adjust_saturation(img, *draw.saturation);
    if (fn == 3 && draw.hue) adjust_hue(img, *draw.hue);
  }
}

bool draw_random_grayscale(double p, SampleRng& rng) { return uniform_float(rng, 0.0, 1.0) < p; }

double draw_gaussian_sigma(double sigma_min, double sigma_max, SampleRng& rng) {
  return uniform_float(rng, sigma_min, sigma_max);
}

}  // namespace batchd::daemon
