#include "cuda_util.h"

namespace batchd::cuda::detail {

Error cuda_error(const std::string& call, cudaError_t e, ErrorCode code, const std::string& hint) {
  return Error(code, call + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")" + hint);
}

Error cuda_error(const std::string& call, cudaError_t e, const std::string& hint) {
  const bool no_device = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
                         e == cudaErrorInitializationError || e == cudaErrorDevicesUnavailable;
  return cuda_error(call, e, no_device ? ErrorCode::kUnavailable : ErrorCode::kInternal, hint);
}

}  // namespace batchd::cuda::detail
