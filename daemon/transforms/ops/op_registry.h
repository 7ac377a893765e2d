// op_registry.h — every op a pipeline spec may name, and the checks and canonical form the schema gives.
//
// The ops come in families, one file each (ops/*_ops.cc), each adding its OpDefs in an add_*_ops() function that
// op_registry.cc calls once. check_params() is the schema half of plan(): unknown keys, missing required ones,
// types, ranges and limits, then the canonical op (params sorted by key, defaults written). Thread-safe: the
// registry is built once, on first use, and never changes.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "transforms/ops/op.h"

namespace batchd::daemon::ops {

// The op called `name`, or null.
const OpDef* find_op(std::string_view name);
// Every op, in the order the families add them (docs list them in this order).
std::span<const OpDef> all_ops();
// "decode, resize, ..." for "unknown op" errors.
std::string known_op_names(bool batch_ops);

// Checks `op`'s parameters against `def` and returns the canonical op: kInvalidArgument naming the key ("size: ...",
// "unknown parameter 'sizes' (known: size, interpolation, max_size, antialias)"). Nested op lists (kOps) are
// copied as they are: the spec planner canonicalizes them op by op.
Result<wire::Op> check_params(const OpDef& def, const wire::Op& op, const OpLimits& limits);

// The families (ops/<family>_ops.cc).
void add_geometry_ops(std::vector<OpDef>* defs);   // decode, resize, crops, flips
void add_color_ops(std::vector<OpDef>* defs);     // color_jitter, random_grayscale, gaussian_blur
void add_augment_ops(std::vector<OpDef>* defs);   // trivial_augment_wide, rand_augment, auto_augment
void add_tensor_ops(std::vector<OpDef>* defs);     // to_tensor, pil_to_tensor, convert_image_dtype, normalize, ...
void add_control_ops(std::vector<OpDef>* defs);    // random_apply, random_choice, random_order, cache
void add_erasing_ops(std::vector<OpDef>* defs);    // random_erasing
void add_batch_ops(std::vector<OpDef>* defs);      // mixup, cutmix (and random_choice's batch kernel)
void add_source_ops(std::vector<OpDef>* defs);     // idx_image, token_window (decode is the geometry family's)

}  // namespace batchd::daemon::ops
