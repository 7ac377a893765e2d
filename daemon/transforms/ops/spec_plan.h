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
// The canonical spec starts with `decode` (added with its defaults when the spec does not start with it), and
// every op has every parameter (defaults written), sorted by key: equal recipes give byte-equal canonical specs.
// Pure: no I/O, cheap (it runs on the daemon's event loop).
#pragma once

#include <cstdint>
#include <vector>

#include "transforms/ops/op.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon::ops {

struct PlannedSpec {
  wire::PipelineSpec canonical;
  ValueType image;                  // the image tensor after the last per-sample op: kTensor, fixed size
  std::vector<TensorDesc> tensors;  // "image" (dtype, [3, h, w] or [h, w, 3]), "label" (int64 [] or float32 [K])
  int64_t num_classes = 0;          // K of the one-hot label when there are batch ops, else 0
  double label_smoothing = 0;       // of the one-hot label
  int cache_at = -1;                // the index of the `cache` op in canonical.ops(), -1 if none
};

// The longest op count plan_spec accepts whatever limits.max_ops says (nesting is bounded by it too).
inline constexpr uint32_t kMaxOpsHardLimit = 1024;

// Only the hard bounds: for re-planning a spec the daemon already planned under its own limits.* (a worker's compile).
inline constexpr OpLimits kNoLimits{kMaxOpsHardLimit, 1u << 30, 1u << 30, 1u << 30, UINT64_MAX};

Result<PlannedSpec> plan_spec(const wire::PipelineSpec& spec, const OpPlanContext& context);

// The output type of one canonical per-sample op (its nested ops included) for input `in`, as plan_spec found it:
// what a worker's compile needs to give each op its input type. Errors as plan_spec's, positions named from "op".
Result<ValueType> plan_op_type(const wire::Op& op, const ValueType& in, int64_t num_classes);

}  // namespace batchd::daemon::ops
