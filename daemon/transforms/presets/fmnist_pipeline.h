// fmnist_pipeline.h — the `fmnist` and `fmnist_u8` pipelines over an IDX dataset (see pipeline.h).
#pragma once

#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

enum class FmnistOutput { kNormalizedFloat, kRawUint8 };

// Fashion-MNIST statistics used by torchvision recipes and ../shared/bench/torch_peer.py.
inline constexpr float kFmnistMean = 0.2860f;
inline constexpr float kFmnistStd = 0.3530f;

Result<std::unique_ptr<Pipeline>> make_fmnist_pipeline(FmnistOutput output, std::shared_ptr<const Dataset> dataset);

}  // namespace batchd::daemon
