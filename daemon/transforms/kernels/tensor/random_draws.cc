#include "transforms/kernels/tensor/random_draws.h"

#include <cmath>
#include <numbers>

namespace batchd::daemon {

namespace {

// Box-Muller: the radius and angle of one pair.
void box_muller(SampleRng& rng, double* z0, double* z1) {
  const double u1 = 1.0 - rng.uniform(0.0, 1.0);  // (0, 1]: log is finite
  const double u2 = rng.uniform(0.0, 1.0);
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  *z0 = radius * std::cos(angle);
  *z1 = radius * std::sin(angle);
}

// Marsaglia-Tsang for shape >= 1; returns log(d v).
double log_gamma_at_least_one(SampleRng& rng, double shape) {
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - rng.uniform(0.0, 1.0);  // (0, 1]
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return std::log(d * v);
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return std::log(d * v);
  }
}

}  // namespace

double normal(SampleRng& rng) {
  double z0, z1;
  box_muller(rng, &z0, &z1);
  return z0;
}

void fill_normal(SampleRng& rng, float* out, size_t n) {
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    double z0, z1;
    box_muller(rng, &z0, &z1);
    out[i] = static_cast<float>(z0);
    out[i + 1] = static_cast<float>(z1);
  }
  if (i < n) out[i] = static_cast<float>(normal(rng));
}

double log_gamma_draw(SampleRng& rng, double shape) {
  if (shape >= 1.0) return log_gamma_at_least_one(rng, shape);
  // Gamma(shape) = Gamma(shape + 1) * u^(1/shape), u uniform in (0, 1].
  const double boosted = log_gamma_at_least_one(rng, shape + 1.0);
  const double u = 1.0 - rng.uniform(0.0, 1.0);
  return boosted + std::log(u) / shape;
}

double gamma_draw(SampleRng& rng, double shape) { return std::exp(log_gamma_draw(rng, shape)); }

double beta_draw(SampleRng& rng, double a, double b) {
  const double log_x = log_gamma_draw(rng, a);
  const double log_y = log_gamma_draw(rng, b);
  // X / (X + Y) = 1 / (1 + exp(log Y - log X)): no 0/0 when both gammas underflow.
  return 1.0 / (1.0 + std::exp(log_y - log_x));
}

}  // namespace batchd::daemon
