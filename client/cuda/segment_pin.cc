#include "segment_pin.h"

#include <atomic>
#include <cstdio>
#include <string>
#include <utility>

#include "cuda_util.h"

namespace batchd::cuda::detail {

namespace {

// cudaHostRegister of the whole mapping, read-only where the device supports it (the daemon maps segments
// read-only into clients unless StreamOptions::writable). Returns "" on success, else the reason.
std::string register_segment(const MappedSegment& seg, int device) {
  int read_only = 0;
  (void)cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, device);
  const unsigned flags = cudaHostRegisterPortable | (read_only != 0 ? cudaHostRegisterReadOnly : 0u);
  const cudaError_t e = cudaHostRegister(const_cast<void*>(seg.data), seg.bytes, flags);
  if (e == cudaSuccess) return "";
  (void)cudaGetLastError();  // a failed registration is not sticky; leave no error behind for the trainer
  std::string why = cuda_error("cudaHostRegister(" + std::to_string(seg.bytes) + " bytes)", e).message();
  if (read_only == 0) {
    why += "; this device cannot register read-only memory (cudaDevAttrHostRegisterReadOnlySupported = 0): open "
           "the stream with StreamOptions::writable = true to pin it";
  } else if (e == cudaErrorMemoryAllocation) {
    why += "; page-locked memory is limited by RLIMIT_MEMLOCK (ulimit -l, LimitMEMLOCK= in a systemd unit)";
  }
  return why;
}

void warn_once(const std::string& why) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    std::fprintf(stderr, "batchd: warning: batches are copied to the GPU from pageable memory (slower): %s\n",
                 why.c_str());
  }
}

}  // namespace

SegmentPin::SegmentPin(MappedSegment segment, int device, bool pin) : segment_(std::move(segment)) {
  if (!pin) {
    status_ = {Pinning::kPageable, "pinning disabled (DeviceOptions::pin = false)"};
    return;
  }
  DeviceGuard guard(device);
  if (std::string why = register_segment(segment_, device); why.empty()) {
    status_ = {Pinning::kRegistered, ""};
    registered_ = true;
  } else {
    status_ = {Pinning::kPageable, why};
    warn_once(why);
  }
}

SegmentPin& SegmentPin::operator=(SegmentPin&& o) noexcept {
  if (this != &o) {
    reset();
    segment_ = std::move(o.segment_);
    status_ = std::move(o.status_);
    registered_ = std::exchange(o.registered_, false);
  }
  return *this;
}

void SegmentPin::reset() {
  if (registered_) (void)cudaHostUnregister(const_cast<void*>(segment_.data));
  registered_ = false;
  segment_ = {};
}

}  // namespace batchd::cuda::detail
