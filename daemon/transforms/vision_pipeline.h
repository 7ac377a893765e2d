// vision_pipeline.h — train224 / train224_u8 / val224 over an imagefolder dataset (see pipeline.h for the
// semantics). Per sample: read the file, decode (JPEG at a reduced DCT scale when the crop allows), crop + resize
// with Pillow's antialiased bilinear filter, flip, then normalize (float32 via a per-channel table) and write CHW
// straight into the slot.
#pragma once

#include "transforms/pipeline.h"

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

// `options` as resolve_vision_options returns them (unresolved ones are resolved here). kInvalidArgument if the
// dataset is not an imagefolder or an option is out of range.
Result<std::unique_ptr<Pipeline>> make_vision_pipeline(VisionMode mode, bool normalize,
                                                       std::shared_ptr<const Dataset> dataset,
                                                       const wire::VisionOptions& options);

}  // namespace batchd::daemon
