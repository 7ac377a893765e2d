// idx_pipeline.h — the executor of a spec whose source is idx_image (spec_plan.h): an IDX dataset's 8-bit grayscale
// images through the pointwise tensor ops (to_tensor, pil_to_tensor, convert_image_dtype, normalize; layout) into the
// slot, with the sample's label. The presets fmnist ([idx_image, to_tensor, normalize(0.2860, 0.3530)]) and
// fmnist_u8 ([idx_image, pil_to_tensor]) are such specs.
//
// The ops are composed once, at compile, into a table of 256 output values (tensor_ops.h PointwiseStep, the same
// float32 arithmetic as the image executor's: fmnist's (x / 255 - 0.2860) / 0.3530 bit for bit as torch computes
// it); run() is one table load per pixel (a memcpy for pil_to_tensor alone). No allocation per sample.
// Tensors: "image" [1, rows, cols] (or [rows, cols, 1] after layout HWC: the same bytes) of the ops' dtype, "label"
// int64 []. Not thread-safe (one per worker and stream, as every Pipeline).
#pragma once

#include <memory>

#include "transforms/ops/spec_plan.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

// kInvalidArgument if `dataset` is not an idx dataset (naming its format).
Result<std::unique_ptr<Pipeline>> make_idx_pipeline(ops::PlannedSpec planned, std::shared_ptr<const Dataset> dataset);

}  // namespace batchd::daemon
