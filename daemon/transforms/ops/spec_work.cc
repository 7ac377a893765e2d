#include "transforms/ops/spec_work.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>

namespace batchd::daemon::ops {

namespace {

uint64_t pixels(const ValueType& t) {
  return t.fixed_size() ? static_cast<uint64_t>(t.height) * static_cast<uint64_t>(t.width) : kNominalPixels;
}

uint64_t taps(const wire::Op& op) {
  const std::string_view name = op.name();
  if (name == "gaussian_blur") {
    const auto k = numbers(op, "kernel_size");
    return 2 * static_cast<uint64_t>(*std::max_element(k.begin(), k.end()));
  }
  if (name == "resize" || name == "random_resized_crop") return 16;
  if (name == "trivial_augment_wide" || name == "auto_augment") return 32;
  if (name == "rand_augment") return 32 * static_cast<uint64_t>(std::max(1.0, number(op, "num_ops", 2)));
  if (name == "color_jitter") return 16;
  if (name == "cache" || name == "decode" || name == "random_apply" || name == "random_choice" ||
      name == "random_order") {
    return 0;  // decode's cost is the dataset's; a container's is its ops'
  }
  return 2;
}

}  // namespace

uint64_t op_work(const wire::Op& op, const ValueType& out) {
  return 3 * pixels(out) * taps(op);  // at most 3 * 2^32 * 2 * 4097 * 32: no overflow
}

Status check_op_cost(const wire::Op& op, const ValueType& in, const ValueType& out, const OpLimits& limits,
                     uint64_t* work) {
  // token_window: seq_len has its own bounds (token_window.h); a 1-channel value is idx_image's, the dataset's size
  // (only pointwise ops follow it, spec_plan.h): neither is a size a client asks for.
  if (out.kind == Kind::kTokens || out.channels == 1) return ok_status();
  const uint32_t side = limits.max_output_side;
  if (out.fixed_size() && (static_cast<uint32_t>(out.height) > side || static_cast<uint32_t>(out.width) > side)) {
    // resize [S, 1] then resize S made S x S^2 (3.2 GiB in one worker at S = 1024) with every size parameter in
    // bounds: every intermediate the plan can size is bounded, not only the sizes ops are given.
    return Error(ErrorCode::kResourceExhausted,
                 fmt::format("makes a {} x {} image from its {} x {} input, over limits.max_output_side ({}; every "
                             "intermediate is bounded by it): give resize a max_size, or [h, w]",
                             out.height, out.width, in.height, in.width, side));
  }
  const uint64_t mine = op_work(op, out);
  *work += mine;
  if (*work > limits.max_sample_work) {
    return Error(ErrorCode::kResourceExhausted,
                 fmt::format("the spec's estimated work per sample reaches {:.2g} multiply-adds here ({:.2g} of them "
                             "this op's), over limits.max_sample_work ({:.2g}; spec_work.h's model, about 1e9 per "
                             "second of one core): make the images smaller before the heavy ops, or use fewer or "
                             "smaller kernels",
                             static_cast<double>(*work), static_cast<double>(mine),
                             static_cast<double>(limits.max_sample_work)));
  }
  return ok_status();
}

}  // namespace batchd::daemon::ops
