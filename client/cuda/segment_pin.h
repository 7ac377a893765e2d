// segment_pin.h — internal: a stream's segment page-locked for the GPU (cudaHostRegister) for an object's lifetime.
// Used by DeviceStream (batches copied by batchd) and PinnedStream (host batches the trainer copies itself).
//
// Registration falls back to pageable memory, with the reason in status() and printed once per process to stderr,
// when cudaHostRegister fails: RLIMIT_MEMLOCK, or a read-only mapping on a device without read-only registration
// (cudaDevAttrHostRegisterReadOnlySupported; open the stream with StreamOptions::writable to pin anyway).
// The registration holds the segment's mapping (MappedSegment::owner) so it never outlives it; the destructor
// unregisters. The caller must make sure no copy from the segment is in flight by then (a LeaseQueue drained).
#pragma once

#include "batchd/cuda.h"

namespace batchd::cuda::detail {

class SegmentPin final {
 public:
  SegmentPin() = default;
  // Registers `segment` on `device` when `pin`; never fails (pin_status() says how the segment is read).
  SegmentPin(MappedSegment segment, int device, bool pin);
  ~SegmentPin() { reset(); }
  SegmentPin(SegmentPin&& o) noexcept { *this = std::move(o); }
  SegmentPin& operator=(SegmentPin&& o) noexcept;
  SegmentPin(const SegmentPin&) = delete;
  SegmentPin& operator=(const SegmentPin&) = delete;

  const PinStatus& status() const { return status_; }
  // Unregisters now (idempotent).
  void reset();

 private:
  MappedSegment segment_;
  PinStatus status_;
  bool registered_ = false;
};

}  // namespace batchd::cuda::detail
