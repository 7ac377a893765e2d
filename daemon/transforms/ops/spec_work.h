// spec_work.h — what a planned op may cost, checked at plan time: its output's size (every intermediate within
// limits.max_output_side, not only the sizes an op is given) and the spec's estimated work per sample (within
// limits.max_sample_work). "A client's spec cannot ask for unbounded work" rests on these two with the per-op
// bounds of the schema (op_registry.h) and the watchdog (task.h).
//
// The work model: multiply-adds on one channel value, 3 channels, per output pixel of each op, times the op's
// taps: gaussian_blur 2 * kernel_size (two separable passes), the resampling ops 16 (a bicubic tap pair per pass,
// downscaling's wider support included), the auto-augment family 32 per op it applies (an affine warp or an
// enhancer), color_jitter 16, everything else 2. An image whose size depends on the input (before the first crop or
// [h, w] resize) counts as kNominalPixels. It is an estimate, for bounding (about 1e9 per second of one core here:
// six gaussian_blur of kernel 101 on 4096 x 4096, 6.1e10, took about 50 s per sample), not for timing.
#pragma once

#include <cstdint>

#include "transforms/ops/op.h"

namespace batchd::daemon::ops {

// The pixels an input of unknown size counts as: 1024 x 1024 (a large photo; ImageNet's average is about 400 x 350).
inline constexpr uint64_t kNominalPixels = uint64_t{1} << 20;

// The estimated work of `op` (canonical) making `out`, in multiply-adds (see above); nested ops are counted
// where they are planned, not here.
uint64_t op_work(const wire::Op& op, const ValueType& out);

// Checks `out` (op's planned output) against limits.max_output_side, and `*work` + op_work() against
// limits.max_sample_work; adds op_work() to *work. kResourceExhausted naming both sizes or the estimate, the limit
// and what to change.
Status check_op_cost(const wire::Op& op, const ValueType& in, const ValueType& out, const OpLimits& limits,
                     uint64_t* work);

}  // namespace batchd::daemon::ops
