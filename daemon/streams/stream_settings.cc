#include "streams/stream_settings.h"

#include <string>

#include "transforms/ops/op.h"

namespace batchd::daemon {

ops::OpLimits op_limits(const Limits& limits) {
  return {limits.max_ops, limits.max_output_side, limits.max_kernel_size, limits.max_padding, limits.max_sample_work};
}

Result<wire::SharingStrategy> parse_strategy(std::string_view name) {
  if (name == "file_descriptor") return wire::FILE_DESCRIPTOR;
  if (name == "file_system") return wire::FILE_SYSTEM;
  return Error(ErrorCode::kInvalidArgument,
               "unknown sharing strategy '" + std::string(name) + "' (use file_descriptor or file_system)");
}

const char* strategy_name(wire::SharingStrategy strategy) {
  switch (strategy) {
    case wire::FILE_DESCRIPTOR: return "file_descriptor";
    case wire::FILE_SYSTEM: return "file_system";
    default: return "default";
  }
}

}  // namespace batchd::daemon
