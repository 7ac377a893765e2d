// weighted_choice.h — Python's random.choices(population, weights)[0] as torchvision's RandomChoice draws it: one
// uniform u in [0, total), the first index whose cumulative weight exceeds u. Equal weights when none are given.
#pragma once

#include <cstddef>
#include <numeric>
#include <vector>

#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon::ops {

class WeightedChoice {
 public:
  // `weights` empty: `count` equal weights. The plan checked that weights sum above 0.
  WeightedChoice(std::vector<double> weights, size_t count) {
    if (weights.empty()) weights.assign(count, 1.0);
    cumulative_.resize(weights.size());
    std::partial_sum(weights.begin(), weights.end(), cumulative_.begin());
  }
  size_t draw(SampleRng& rng) const {
    const double u = rng.uniform(0.0, cumulative_.back());
    size_t i = 0;
    while (i + 1 < cumulative_.size() && cumulative_[i] <= u) ++i;
    return i;
  }

 private:
  std::vector<double> cumulative_;
};

}  // namespace batchd::daemon::ops
