// spec_pipeline.h — the Pipeline that runs a canonical PipelineSpec (ops/spec_plan.h), compiled once per worker
// and stream.
//
// Per sample: read the file, then the ops' kernels in order with one SampleRng seeded by (seed, epoch, index, copy:
// BatchContext::copies), then collate into the slot. Two fusions keep the presets' speed (and their bytes:
// PresetGoldenTest):
//   head  decode + random_resized_crop, or decode + resize + center_crop, as one CropResizer step (fused_head.h);
//   tail  the flips before the tensor conversion, the conversion and the pointwise ops after it, as one pass
//         through a per-channel table (fused_tail.h).
// Batch ops (mixup, cutmix) run in finish_batch() over the whole batch; a stream with batch ops is made in one
// task per batch (whole_batches()). Labels: int64, or the float32 one-hot [K] (smoothed) with batch ops.
// A `cache` op is a point between steps (cache_point.h): a hit skips every step before it, the file's read included;
// the head fuses only steps before the point, and a tail the point would split runs as kernels.
// Not thread-safe (one per worker and stream); no allocation per sample once the buffers have grown.
#pragma once

#include <memory>

#include "transforms/spec/cache_point.h"
#include "transforms/ops/op.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

// The executor of `planned` (a spec whose source is decode, planned for `dataset`: compile_spec.h plans and picks
// the executor). kInvalidArgument if `dataset` holds no images.
// `cache`: where the spec has a cache point, the worker's cache and the stream's key and owner (cache_point.h).
Result<std::unique_ptr<Pipeline>> make_decode_pipeline(ops::PlannedSpec planned, std::shared_ptr<const Dataset> dataset,
                                                       const CacheBinding& cache = {});

}  // namespace batchd::daemon
