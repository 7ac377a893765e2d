// cuda_util.h — internal: CUDA runtime errors as batchd Errors, and a guard that makes a device current for a scope.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "batchd/result.h"

namespace batchd::cuda::detail {

// "<call>: <cudaErrorName> (<text>)<hint>" with `code` (kUnavailable for "no device/driver" errors, else kInternal
// unless given).
Error cuda_error(const std::string& call, cudaError_t e, const std::string& hint = "");
Error cuda_error(const std::string& call, cudaError_t e, ErrorCode code, const std::string& hint = "");

// `device` checked against the visible devices, -1 meaning the calling thread's current device. kUnavailable
// without a device or driver (device_count()'s error), kInvalidArgument naming the count for a device past it.
Result<int> resolve_device(int device);

// Makes `device` the calling thread's current device for the guard's lifetime, restoring the previous one after
// (the trainer's current device is its business; batchd must not change it behind its back).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device && cudaSetDevice(device) == cudaSuccess) {
      changed_ = true;
    }
  }
  ~DeviceGuard() {
    if (changed_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

}  // namespace batchd::cuda::detail
