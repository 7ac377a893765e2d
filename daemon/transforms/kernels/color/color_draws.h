// color_draws.h — the random draws of torchvision 0.14's ColorJitter, RandomGrayscale and GaussianBlur, from a
// sample's SampleRng (transforms/kernels/vision_transforms.h), in the order torchvision draws them.
//
// torchvision draws its factors with torch.empty(1).uniform_(lo, hi) and torch.rand(1): float32 values. Here
// uniform_float() draws 24 random bits as torch's uniform_real_distribution<float> does, so every factor is a float32
// value as torchvision's are (a range [f, f] gives float(f), which PIL then sees), and the draws have torch's
// distribution (not its stream of numbers: the generator is batchd's).
#pragma once

#include <array>
#include <optional>

#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon {

// torch.empty(1).uniform_(lo, hi) (a float32 value, returned as a double): lo + x * (hi - lo), x a multiple of
// 2^-24 in [0, 1).
double uniform_float(SampleRng& rng, double lo, double hi);

// One factor range of ColorJitter ([min, max] after ColorJitter._check_input); nullopt is torchvision's None:
// the factor is neither drawn nor applied.
using FactorRange = std::optional<std::array<double, 2>>;

struct ColorJitterRanges {
  FactorRange brightness, contrast, saturation, hue;
};

// ColorJitter._check_input for a number n: [max(0, center - n), center + n] (clip_low) or [center - n, center + n];
// for a pair, the pair. Either is None when it is [center, center]. The caller has checked the ranges.
FactorRange color_jitter_range(const std::array<double, 2>& range, double center);
FactorRange color_jitter_range(double n, double center, bool clip_low);

// ColorJitter.get_params: `order` is torch.randperm(4) (0 brightness, 1 contrast, 2 saturation, 3 hue; uniform
// over the 24 orders, drawn first), then one uniform_float per range that is not None, in the order brightness,
// contrast, saturation, hue.
struct ColorJitterDraw {
  std::array<int, 4> order{0, 1, 2, 3};
  std::optional<double> brightness, contrast, saturation, hue;
};
ColorJitterDraw draw_color_jitter(const ColorJitterRanges& ranges, SampleRng& rng);

// ColorJitter.forward: the drawn adjustments in `order` (color.h's adjust_*), skipping the None ones.
void apply_color_jitter(RgbImage& img, const ColorJitterDraw& draw);

// RandomGrayscale.forward's draw: torch.rand(1) < p.
bool draw_random_grayscale(double p, SampleRng& rng);

// GaussianBlur.get_params: sigma = torch.empty(1).uniform_(sigma_min, sigma_max).item().
double draw_gaussian_sigma(double sigma_min, double sigma_max, SampleRng& rng);

}  // namespace batchd::daemon
