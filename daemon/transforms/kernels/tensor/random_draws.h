// random_draws.h — the continuous distributions of the tensor and batch ops, drawn from a SampleRng (so a sample's
// or a batch's draws are fixed by (seed, epoch, index), whichever worker makes it).
//
// normal: N(0, 1) by Box-Muller (G. E. P. Box, M. E. Muller, 1958): z0 = sqrt(-2 ln u1) cos(2 pi u2),
//   z1 = sqrt(-2 ln u1) sin(2 pi u2), u1 in (0, 1], u2 in [0, 1). RandomErasing(value="random") erases with
//   torch.empty(...).normal_(): N(0, 1) per element.
// gamma: Gamma(shape, 1) by Marsaglia & Tsang, "A simple method for generating gamma variables" (ACM TOMS 26(3),
//   2000): for shape >= 1, d = shape - 1/3, c = 1/sqrt(9d), repeat x ~ N(0,1), v = (1 + c x)^3 until v > 0 and
//   u < 1 - 0.0331 x^4 or ln u < x^2/2 + d (1 - v + ln v); the draw is d v. For shape < 1: Gamma(shape + 1) u^(1/shape)
//   (their section 6), kept as a logarithm so that tiny shapes (alpha = 0.1: u^10) do not underflow to 0.
// beta: Beta(a, b) = X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b): what references/classification/transforms.py's
//   float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0]) draws for mixup/cutmix's lambda.
//
// The distributions are torch's; the streams of numbers are not (batchd's SampleRng is not torch's generator):
// tests/ops/test_tensor.py checks moments and Kolmogorov-Smirnov distance against scipy.stats with fixed seeds.
#pragma once

#include <cstddef>

#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon {

// One N(0, 1) draw (two uniforms; Box-Muller's second value is not kept).
double normal(SampleRng& rng);
// n N(0, 1) draws into out (both values of each Box-Muller pair; n uniforms, rounded up to even).
void fill_normal(SampleRng& rng, float* out, size_t n);
// log of one Gamma(shape, 1) draw; shape > 0.
double log_gamma_draw(SampleRng& rng, double shape);
// One Gamma(shape, 1) draw; shape > 0 (may underflow to 0 for shape well below 1: use log_gamma_draw).
double gamma_draw(SampleRng& rng, double shape);
// One Beta(a, b) draw in [0, 1]; a, b > 0.
double beta_draw(SampleRng& rng, double a, double b);

}  // namespace batchd::daemon
