// pool_core.h — internal: PoolCore, the state shared by a DevicePool and every DeviceBatch from it (device buffer
// sets, asynchronous copies, host leases in flight). See batchd/cuda.h for the contract.
// Thread-safety: mu_ guards the buffer sets; every public member function takes it (DeviceBatch::release may
// run on any thread). The host leases in flight are a LeaseQueue with its own lock (taken under mu_, never the
// other way round); wait_oldest() waits on a copy's event without holding either.
#pragma once

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "batchd/cuda.h"
#include "batchd/wire/segment_layout.h"
#include "cuda_util.h"
#include "lease_queue.h"
#include "batchd/mutex.h"

namespace batchd::cuda {
namespace detail {

using batchd::Mutex;
using batchd::MutexLock;

// Shared by the DevicePool handle and every DeviceBatch from it, so buffers outlive whichever goes last.
class PoolCore final : public std::enable_shared_from_this<PoolCore> {
 public:
  PoolCore(int device, uint32_t max_batches, uint32_t batch_size)
      : device_(device), max_batches_(max_batches), batch_size_(batch_size) {}

  ~PoolCore() {
    drain();
    DeviceGuard guard(device_);
    for (Set& s : sets_) {
      if (s.base != nullptr) (void)cudaFree(s.base);
      if (s.ready != nullptr) (void)cudaEventDestroy(s.ready);
      if (s.reusable != nullptr) (void)cudaEventDestroy(s.reusable);
    }
  }

  int device() const { return device_; }

  Result<DeviceBatch> to_device(Batch batch, cudaStream_t stream) EXCLUDES(mu_) {
    if (!batch.valid()) return Error(ErrorCode::kInvalidArgument, "to_device: the batch was already released");
    MutexLock lock(&mu_);
    leases_.poll();
    DeviceGuard guard(device_);
    if (layout_.empty()) plan_layout(batch);
    if (batch.tensors().size() != layout_.size()) {
      return Error(ErrorCode::kInvalidArgument, "to_device: batch has " + std::to_string(batch.tensors().size()) +
                                                    " tensors, the pool's stream " + std::to_string(layout_.size()));
    }
    auto set = free_set();
    if (!set.ok()) return set.error();
    Set& s = sets_[*set];
    // The buffers' previous batch may still be read by work on the stream it was delivered to.
    if (s.reusable_pending) {
      if (cudaError_t e = cudaStreamWaitEvent(stream, s.reusable, 0); e != cudaSuccess) {
        return cuda_error("cudaStreamWaitEvent", e);
      }
    }
    DeviceBatch out;
    char* dst = static_cast<char*>(s.base);
    bool enqueued = false;
    for (size_t i = 0; i < layout_.size(); ++i) {
      const Tensor& t = batch.tensors()[i];
      if (t.nbytes > layout_[i].bytes) {
        if (enqueued) (void)cudaStreamSynchronize(stream);  // copies read the lease released below
        return Error(ErrorCode::kInternal, "to_device: tensor '" + t.name + "' of " + std::to_string(t.nbytes) +
                                               " bytes is larger than a full batch's (" +
                                               std::to_string(layout_[i].bytes) + ")");
      }
      void* d = dst + layout_[i].offset;
      if (cudaError_t e = cudaMemcpyAsync(d, t.data, t.nbytes, cudaMemcpyHostToDevice, stream); e != cudaSuccess) {
        if (enqueued) (void)cudaStreamSynchronize(stream);
        return cuda_error("cudaMemcpyAsync", e);
      }
      enqueued = true;
      out.tensors_.push_back(DeviceTensor{t.name, t.dtype, t.shape, d, t.nbytes});
    }
    if (cudaError_t e = cudaEventRecord(s.ready, stream); e != cudaSuccess) {
      (void)cudaStreamSynchronize(stream);
      return cuda_error("cudaEventRecord", e);
    }
    out.sequence_ = batch.sequence();
    out.epoch_ = batch.epoch();
    out.batch_ = batch.index();
    out.num_samples_ = batch.size();
    out.skipped_ = batch.skipped();
    // The host lease is kept until the copies are done (an event recorded after them on `stream`).
    if (Status st = leases_.defer(std::move(batch), stream); !st.ok()) return st.error();
    s.in_use = true;
    s.reusable_pending = false;  // only now: a failed attempt above must leave the wait for the next one
    out.pool_ = shared_from_this();
    out.set_ = *set;
    out.ready_ = s.ready;
    out.stream_ = stream;
    return out;
  }

  // From DeviceBatch::release, on any thread.
  void give_back(int set, cudaStream_t stream) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    // Recording on a created stream needs no current device; switching devices here could initialize a context on
    // the releasing thread's device 0 (cudaSetDevice does, since CUDA 12). Only the legacy stream 0 needs it.
    std::optional<DeviceGuard> guard;
    if (stream == nullptr) guard.emplace(device_);
    Set& s = sets_[static_cast<size_t>(set)];
    s.released_at = ++release_clock_;
    if (cudaEventRecord(s.reusable, stream) == cudaSuccess) {
      s.reusable_pending = true;
    } else {
      (void)cudaDeviceSynchronize();  // the stream is gone or broken: be safe the slow way
      s.reusable_pending = false;
    }
    s.in_use = false;
  }

  size_t poll() { return leases_.poll(); }
  bool has_free_set() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (sets_.size() < max_batches_) return true;
    return std::any_of(sets_.begin(), sets_.end(), [](const Set& s) { return !s.in_use; });
  }
  bool wait_oldest() { return leases_.wait_oldest(); }
  void drain() { leases_.drain(); }

 private:
  struct Slice {
    size_t offset, bytes;
  };
  struct Set {
    void* base = nullptr;
    cudaEvent_t ready = nullptr;     // recorded after the copies: DeviceBatch::ready_event()
    cudaEvent_t reusable = nullptr;  // recorded on release: the next copy into the set waits for it
    bool reusable_pending = false;
    bool in_use = false;
    uint64_t released_at = 0;
  };

  // One slice per tensor, sized for a full batch (this batch may be the short last one of an epoch).
  void plan_layout(const Batch& b) REQUIRES(mu_) {
    size_t offset = 0;
    const size_t n = std::max<size_t>(b.size(), 1), full = std::max<size_t>(batch_size_, b.size());
    for (const Tensor& t : b.tensors()) {
      const size_t bytes = t.nbytes / n * full;
      layout_.push_back({offset, bytes});
      offset += wire::align_up(bytes, wire::kTensorAlignment);  // as the host tensors, and as cudaMalloc aligns
    }
    set_bytes_ = std::max<size_t>(offset, wire::kTensorAlignment);
  }

  // The free set released longest ago (its reusable event is the likeliest to have completed: a pageable copy
  // waits for it on the host), else a new one while under max_batches.
  Result<size_t> free_set() REQUIRES(mu_) {
    std::optional<size_t> best;
    for (size_t i = 0; i < sets_.size(); ++i) {
      if (!sets_[i].in_use && (!best || sets_[i].released_at < sets_[*best].released_at)) best = i;
    }
    if (best) return *best;
    if (sets_.size() >= max_batches_) {
      return Error(ErrorCode::kResourceExhausted,
                   "all " + std::to_string(max_batches_) + " device batches of this pool are in use (held by the "
                   "caller or being copied): release one (DeviceBatch::release or destroy it) before asking for "
                   "more, or raise DeviceOptions::max_batches");
    }
    Set s;
    cudaError_t e = cudaMalloc(&s.base, set_bytes_);
    if (e != cudaSuccess) {
      return cuda_error("cudaMalloc(" + std::to_string(set_bytes_) + " bytes)", e, ErrorCode::kResourceExhausted,
                        ": the device is out of memory; use a smaller batch or fewer DeviceOptions::max_batches");
    }
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s.ready, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s.reusable, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      (void)cudaFree(s.base);
      if (s.ready != nullptr) (void)cudaEventDestroy(s.ready);
      return cuda_error("cudaEventCreateWithFlags", e);
    }
    sets_.push_back(s);
    return sets_.size() - 1;
  }

  const int device_;
  const uint32_t max_batches_;
  const uint32_t batch_size_;
  Mutex mu_;
  std::vector<Slice> layout_ GUARDED_BY(mu_);
  size_t set_bytes_ GUARDED_BY(mu_) = 0;
  std::vector<Set> sets_ GUARDED_BY(mu_);
  uint64_t release_clock_ GUARDED_BY(mu_) = 0;
  LeaseQueue leases_{device_};  // host leases whose copies are in flight (its own lock)
};

}  // namespace detail

}  // namespace batchd::cuda
