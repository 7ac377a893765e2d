// spec_plan.h — a PipelineSpec checked once, at OpenStream (plan()), and written in canonical form.
//
// Rules, each refused with kInvalidArgument naming the op's position (ops[2], ops[1].ops[0], batch_ops[0]), its name
// and the key: an unknown op; an unknown, missing or out-of-range parameter (op_registry.h check_params, limits.*
// included); an op that does not fit its input (normalize before the image is a float tensor, an image op after
// to_tensor, decode anywhere but first, mixup on a non-float output); a per-sample op in batch_ops or a batch op in
// ops; more than limits.max_ops ops, nested ones included; output whose size depends on the input image (collate
// needs fixed shapes: the image ops must end in a crop or a resize to [h, w]); no tensor conversion at the end; a
// `cache` op (the cache point, cache/sample_cache.h) nested in another op, in batch_ops, twice, or after a random op
// (tf.data's rule: what reaches the cache point must be the same every epoch; the error names the random op).
// The canonical spec starts with its source op (source_ops.cc): `decode` (added with its defaults when the spec
// starts with no source op), `idx_image` (then only to_tensor, pil_to_tensor, convert_image_dtype, normalize and
// layout may follow; no batch_ops) or `token_window` (alone: its seq_len resolved against the dataset, 0 = the
// dataset's). Every op has every parameter (defaults written), sorted by key: equal recipes give byte-equal
// canonical specs. OpPlanContext.dataset sizes the source's output; without one (a config pipeline at load) the
// source ops plan with placeholder sizes.
// Pure: no I/O, cheap (it runs on the daemon's event loop).
#pragma once

#include <cstdint>
#include <vector>

#include "transforms/ops/op.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon::ops {

// What a spec reads its samples from: its first op (decode when it starts with none of these; source_ops.cc).
enum class Source { kDecode, kIdxImage, kTokenWindow };

struct PlannedSpec {
  wire::PipelineSpec canonical;
  Source source = Source::kDecode;
  ValueType image;                  // the image tensor after the last per-sample op: kTensor, fixed size
                                    // (token_window: kTokens, width T)
  // decode / idx_image: "image" (dtype, [C, h, w] or [h, w, C], C = 3, or 1 after idx_image), "label" (int64 [] or
  // float32 [K]); token_window: "input_ids", "targets" (int64 [T] each).
  std::vector<TensorDesc> tensors;
  // The output type of each op of canonical.ops(), as its type rule (OpDef::plan) gave it: what a worker's compile
  // gives each kernel as its input, and reserves buffers for (op.h reserve_for), without planning again.
  std::vector<ValueType> op_types;
  int64_t num_classes = 0;          // K of the one-hot label when there are batch ops, else 0
  double label_smoothing = 0;       // of the one-hot label
  int cache_at = -1;                // the index of the `cache` op in canonical.ops(), -1 if none
};

// The longest op count plan_spec accepts whatever limits.max_ops says (nesting is bounded by it too).
inline constexpr uint32_t kMaxOpsHardLimit = 1024;

// Only the hard bounds: for re-planning a spec the daemon already planned under its own limits.* (a worker's compile).
inline constexpr OpLimits kNoLimits{kMaxOpsHardLimit, 1u << 30, 1u << 30, 1u << 30, UINT64_MAX};

Result<PlannedSpec> plan_spec(const wire::PipelineSpec& spec, const OpPlanContext& context);

// plan_spec's rules for a spec whose source is `source` (idx_image, token_window: source_ops.cc): what may follow it,
// and a token_window spec's tensors and canonical seq_len (`resolved`: planned with the dataset).
Status check_source_spec(const wire::PipelineSpec& spec, const std::string& source);
PlannedSpec token_window_plan(PlannedSpec planned, const ValueType& windows, bool resolved);

// The output type of one canonical per-sample op (its nested ops included) for input `in`, as plan_spec found it:
// what a worker's compile needs to give each op its input type. Errors as plan_spec's, positions named from "op".
Result<ValueType> plan_op_type(const wire::Op& op, const ValueType& in, int64_t num_classes);

}  // namespace batchd::daemon::ops
