// lease_queue.h — internal: host leases whose release waits for GPU work. Each entry is a host Batch (a slot of the
// daemon's segment) and a CUDA event recorded after the work that may still read it (an asynchronous copy out of
// the slot); the lease goes back to the daemon only once that event has completed, so the daemon never refills a
// slot that a copy in flight is reading. Used by DevicePool (its own copies) and PinnedStream (the trainer's
// copies, e.g. torch's .to(device, non_blocking=True), ordered by an event recorded when the batch is given back).
//
// Thread-safety: every member function takes mu_; wait_oldest() waits on the event without holding it. Entries are
// released oldest first: events recorded on one stream complete in order, and on several streams the queue still
// only ever releases a lease whose own event has completed.
#pragma once

#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "batchd/cuda.h"
#include "cuda_util.h"
#include "batchd/mutex.h"

namespace batchd::cuda::detail {

using batchd::Mutex;
using batchd::MutexLock;

class LeaseQueue final {
 public:
  explicit LeaseQueue(int device) : device_(device) {}
  ~LeaseQueue() {
    drain();
    for (cudaEvent_t e : spare_events_) (void)cudaEventDestroy(e);
  }
  LeaseQueue(const LeaseQueue&) = delete;
  LeaseQueue& operator=(const LeaseQueue&) = delete;

  // Records an event on `stream` now and keeps `batch` until it completes. If the event cannot be recorded (the
  // stream is gone or the context is broken), waits for the stream's work (or, failing that, the device's) and
  // releases the lease at once: never early. `stream` nullptr is the legacy default stream of device_.
  Status defer(Batch batch, cudaStream_t stream) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    // Recording on a created stream needs no current device; switching devices here could initialize a context on
    // the releasing thread's device 0 (cudaSetDevice does, since CUDA 12). Only the legacy stream 0 needs it.
    std::optional<DeviceGuard> guard;
    if (stream == nullptr) guard.emplace(device_);
    cudaEvent_t event = nullptr;
    cudaError_t e = take_event(&event);
    if (e == cudaSuccess) e = cudaEventRecord(event, stream);
    if (e != cudaSuccess) {
      if (event != nullptr) spare_events_.push_back(event);
      if (cudaStreamSynchronize(stream) != cudaSuccess) (void)cudaDeviceSynchronize();
      (void)cudaGetLastError();  // leave no error behind for the trainer's next CUDA call
      batch.release();
      return cuda_error("cudaEventRecord (the lease was released after waiting for the stream)", e);
    }
    entries_.push_back({event, std::move(batch)});
    return ok_status();
  }

  // Releases the leases whose events have completed, oldest first; returns how many are still waiting.
  size_t poll() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (!entries_.empty()) {
      if (cudaEventQuery(entries_.front().event) == cudaErrorNotReady) break;
      entries_.front().batch.release();  // done (or the context is broken: nothing reads it any more)
      spare_events_.push_back(entries_.front().event);
      entries_.pop_front();
    }
    return entries_.size();
  }

  // Waits (cudaEventSynchronize) for the oldest entry's event and releases its lease; false if there is none.
  bool wait_oldest() EXCLUDES(mu_) {
    std::optional<Entry> f;
    {
      MutexLock lock(&mu_);
      if (entries_.empty()) return false;
      f.emplace(std::move(entries_.front()));
      entries_.pop_front();
    }
    (void)cudaEventSynchronize(f->event);  // an error (a broken context) also means no copy is running any more
    f->batch.release();
    MutexLock lock(&mu_);
    spare_events_.push_back(f->event);
    return true;
  }

  // Waits for every entry and releases every lease.
  void drain() EXCLUDES(mu_) {
    while (wait_oldest()) {
    }
  }

 private:
  struct Entry {
    cudaEvent_t event;
    Batch batch;  // the host lease, released once `event` has completed
  };

  cudaError_t take_event(cudaEvent_t* e) REQUIRES(mu_) {
    if (!spare_events_.empty()) {
      *e = spare_events_.back();
      spare_events_.pop_back();
      return cudaSuccess;
    }
    return cudaEventCreateWithFlags(e, cudaEventDisableTiming);
  }

  const int device_;
  Mutex mu_;
  std::deque<Entry> entries_ GUARDED_BY(mu_);  // oldest first
  std::vector<cudaEvent_t> spare_events_ GUARDED_BY(mu_);
};

}  // namespace batchd::cuda::detail
