#include "cuda_util.h"

#include "batchd/cuda.h"

namespace batchd::cuda::detail {

Error cuda_error(const std::string& call, cudaError_t e, ErrorCode code, const std::string& hint) {
  return Error(code, call + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")" + hint);
}

Error cuda_error(const std::string& call, cudaError_t e, const std::string& hint) {
  const bool no_device = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
                         e == cudaErrorInitializationError || e == cudaErrorDevicesUnavailable;
  return cuda_error(call, e, no_device ? ErrorCode::kUnavailable : ErrorCode::kInternal, hint);
}

Result<int> resolve_device(int device) {
  auto n = device_count();
  if (!n.ok()) return n.error();
  if (device < 0) {
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return cuda_error("cudaGetDevice", e);
  }
  if (device >= *n) {
    return Error(ErrorCode::kInvalidArgument, "CUDA device " + std::to_string(device) + " does not exist (" +
                                                  std::to_string(*n) + " visible; see CUDA_VISIBLE_DEVICES)");
  }
  return device;
}

}  // namespace batchd::cuda::detail
