// fused_head.h — the head of a spec's executor (spec_pipeline.h): decode followed by random_resized_crop (square,
// bilinear or bicubic), by a random_choice whose every op is such a crop of one size (timm's random interpolation:
// RandomChoice of a bilinear and a bicubic RandomResizedCrop), or by resize(n) + center_crop(c) (square, bilinear
// or bicubic, c <= n), run as one CropResizer step, drawing as the ops would (the choice, then the box). The JPEG is
// DCT-scaled as far as the crop allows and only the window the resize reads is decoded (crop_resize.h), unless
// decode's exact_decode is set (then the bytes are the unfused ops'). This keeps the presets' speed and their bytes
// (PresetGoldenTest).
#pragma once

#include <memory>

#include "transforms/ops/op.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

// The fused kernel for canonical ops[0..n) when they allow it, with *used = how many ops it replaces; else a null
// kernel and *used = 0. Errors: the decoder cannot be made (kInternal). The kernel times decode and resize into
// *times, which must outlive it.
Result<std::unique_ptr<ops::SampleKernel>> fused_head(const wire::PipelineSpec& spec, StageTimes* times, int* used);

}  // namespace batchd::daemon
