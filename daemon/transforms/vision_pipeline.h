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

Result<std::unique_ptr<Pipeline>> make_vision_pipeline(VisionMode mode, bool normalize,
                                                       std::shared_ptr<const Dataset> dataset,
                                                       const PipelineOptions& options);

}  // namespace batchd::daemon
