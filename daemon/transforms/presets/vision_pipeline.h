// vision_pipeline.h — the options of the vision presets (train224, train224_u8, val224, val224_u8): crop_size,
// resize_size, exact_decode. The presets themselves are op lists (pipeline.h preset_spec), run by spec_pipeline.h.
#pragma once

#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

enum class VisionMode { kTrain, kVal };

// ImageNet statistics (torchvision's reference recipes).
inline constexpr float kImagenetMean[3] = {0.485f, 0.456f, 0.406f};
inline constexpr float kImagenetStd[3] = {0.229f, 0.224f, 0.225f};

inline constexpr uint32_t kDefaultCropSize = 224;    // torchvision's ImageNet recipes
inline constexpr uint32_t kDefaultResizeSize = 256;  // val: Resize(256) then CenterCrop(224)

// Applies the defaults (crop_size 224, resize_size 256; exact_decode false) and checks the ranges: crop_size in
// [8, 4096]; val: resize_size in [crop_size, 8192]. kInvalidArgument names the option. Idempotent.
Result<wire::VisionOptions> resolve_vision_options(VisionMode mode, const wire::VisionOptions& requested);

}  // namespace batchd::daemon
