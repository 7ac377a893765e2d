// batchd/cuda.h — batches straight into a CUDA trainer: the stream's segment pinned once, each batch copied
// asynchronously into the trainer's CUDA stream. Built when the CUDA toolkit is found (CMake option
// BATCHD_WITH_CUDA=AUTO|ON|OFF; target batchd::cuda, which links only the CUDA runtime).
//
//   auto client = batchd::Client::connect();
//   auto dev = batchd::cuda::DeviceStream::open(std::move(client->open_stream(opts).value()));
//   cudaStream_t s = ...;                                  // the trainer's stream
//   while (true) {
//     auto batch = dev->next(s);                           // Result<std::optional<DeviceBatch>>
//     if (!batch.ok()) { ...error... }
//     if (!*batch) break;
//     const batchd::cuda::DeviceTensor* image = (*batch)->find("image");   // device pointer, ready on `s`
//     my_kernel<<<grid, block, 0, s>>>(image->data_as<float>(), ...);
//   }                                                      // a DeviceBatch's buffers return to the pool when
//                                                          // the work enqueued on `s` before its release is done
//
// Why this is faster than torch's pin_memory: a batch there is written by a worker into shared memory, then copied
// again by a pin-memory thread into page-locked memory, then DMA'd. Here the segment every batch of the stream is
// written into is page-locked once (cudaHostRegister, at open), so each batch is DMA'd from where the worker wrote
// it: one copy, no host synchronization per batch.
//
// Ordering, all on the GPU (no cudaStreamSynchronize/cudaEventSynchronize on the hot path):
//   - DeviceStream copies batch N+1 on its own side stream while the trainer computes on batch N (the
//     DataPrefetcher pattern of PyTorch's data-loading tutorial, without its per-batch pinning); next(s) makes `s`
//     wait (cudaStreamWaitEvent) for the copy of the batch it returns.
//   - The host lease (the daemon's slot) is released once the copy's event has completed, polled without blocking
//     on later calls, so the daemon can refill the slot.
//   - A DeviceBatch's device buffers are reused for a later batch only after the work enqueued on the stream it was
//     delivered to, up to its release, has completed (an event; the next copy into them waits for it on the GPU).
//
// Pinning falls back to pageable copies (same results, slower: the CUDA driver stages each copy, and a pageable
// cudaMemcpyAsync returns only after the copy stream's earlier work is done) when cudaHostRegister fails:
// RLIMIT_MEMLOCK, or a read-only mapping on a device without read-only registration
// (cudaDevAttrHostRegisterReadOnlySupported; open the stream with StreamOptions::writable to pin anyway). The
// reason is printed once per process to stderr and is available from DeviceStream::pin_status(). Without a
// device or driver at all, DeviceStream::open fails with kUnavailable (read batches on the host instead).
//
// Thread-safety: a DeviceStream is used from one thread at a time; DeviceBatches may be released on any thread.
// Errors: Result/Status as in batchd/client.h; CUDA failures carry the runtime's error name and text.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "batchd/client.h"

namespace batchd::cuda {

namespace detail {
class PoolCore;
class DeviceStreamCore;
class PinnedStreamCore;
}  // namespace detail

// The number of CUDA devices visible to this process. kUnavailable, naming cudaGetDeviceCount's error, when there
// is no device or no driver.
Result<int> device_count();

// How a stream's segment is read by the GPU.
enum class Pinning {
  kRegistered,  // page-locked with cudaHostRegister: DMA straight from the segment
  kPageable,    // not page-locked: the CUDA driver stages every copy through its own pinned buffer (slower)
};

struct PinStatus {
  Pinning pinning = Pinning::kPageable;
  std::string reason;  // why kPageable ("" when kRegistered), e.g. "cudaHostRegister: cudaErrorNoDevice (...)"
};

// One tensor of a batch in device memory: C-contiguous, same name/dtype/shape as the host Tensor it came from.
// Valid until its DeviceBatch is released or destroyed (then the buffer may be overwritten by a later batch).
struct DeviceTensor {
  std::string name;
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;  // [B, ...]
  void* data = nullptr;        // device pointer, 256-byte aligned, on DeviceOptions::device
  size_t nbytes = 0;
  template <typename T>
  T* data_as() const { return static_cast<T*>(data); }
};

// A batch on the device. Move-only RAII: destroying or release()-ing it returns its buffers to the pool, to be
// reused once the work enqueued on stream() until then has completed. epoch(), index(), sequence(), size(),
// skipped(), tensors() and find() are batchd::detail::BatchBase's (batchd/client.h), as for a host Batch.
class DeviceBatch : public batchd::detail::BatchBase<DeviceTensor> {
 public:
  DeviceBatch() = default;
  DeviceBatch(DeviceBatch&&) noexcept;
  DeviceBatch& operator=(DeviceBatch&&) noexcept;
  DeviceBatch(const DeviceBatch&) = delete;
  DeviceBatch& operator=(const DeviceBatch&) = delete;
  ~DeviceBatch();

  bool valid() const { return pool_ != nullptr; }
  // The CUDA stream the batch was delivered on: its data is ready for any work enqueued there afterwards.
  cudaStream_t stream() const { return stream_; }
  // Completes when the batch's copies are done (DeviceStream::next already made its consumer stream wait for it;
  // with DevicePool::to_device, other streams may cudaStreamWaitEvent on it). Valid while the batch is.
  cudaEvent_t ready_event() const { return ready_; }
  // Moves the batch to `stream`: release() then orders buffer reuse after the work enqueued there instead. Only
  // the last stream set counts: the caller orders earlier streams' work on the batch before `stream` (e.g.
  // cudaStreamWaitEvent), unlike torch's record_stream, which accumulates streams.
  void set_stream(cudaStream_t stream) { stream_ = stream; }
  // Returns the buffers to the pool (ordered after the work already enqueued on stream()). Idempotent.
  void release();

 private:
  friend class detail::PoolCore;
  std::shared_ptr<detail::PoolCore> pool_;
  int set_ = -1;
  cudaEvent_t ready_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Device buffers for the batches of one stream, and the host leases whose copies are still in flight.
// Buffer sets are allocated (cudaMalloc) on first use, up to `max_batches`, each sized for a full batch of the
// stream, and freed when the pool and every DeviceBatch from it are gone.
class DevicePool {
 public:
  // device: CUDA device ordinal, or -1 for the calling thread's current device. max_batches >= 1: device batches
  // alive at once (held by the caller or being copied).
  static Result<DevicePool> create(const StreamInfo& stream, int device = -1, uint32_t max_batches = 3);
  DevicePool(DevicePool&&) noexcept;
  DevicePool& operator=(DevicePool&&) noexcept;
  ~DevicePool();  // waits for copies still in flight (their host memory must outlive them)

  // Enqueues one cudaMemcpyAsync per tensor of `batch` onto `stream` into a free buffer set and records an event;
  // the host lease is kept until that event completes, then released (checked without blocking by later calls).
  // No host synchronization. kResourceExhausted when `max_batches` device batches are alive.
  Result<DeviceBatch> to_device(Batch batch, cudaStream_t stream);
  // Releases the host leases whose copies have completed; returns how many are still in flight.
  size_t poll();
  // Whether to_device() would find a buffer set (a free one, or room for a new one).
  bool has_free_set() const;
  // Waits (cudaEventSynchronize) for the oldest copy in flight and releases its lease; false if none.
  bool wait_oldest();
  int device() const;

 private:
  explicit DevicePool(std::shared_ptr<detail::PoolCore> core);
  std::shared_ptr<detail::PoolCore> core_;
};

struct DeviceOptions {
  int device = -1;           // CUDA device ordinal; -1 = the opening thread's current device
  bool pin = true;           // page-lock the segment (cudaHostRegister); false = pageable copies
  uint32_t max_batches = 3;  // device buffer sets, >= prefetch + 1 (the ones being copied and the trainer's);
                             // prefetch + 2 also leaves a spare, so the trainer may hold its previous batch while
                             // asking for the next
  uint32_t prefetch = 1;     // batches copied ahead of the trainer at once, >= 1. More keeps a GPU that consumes
                             // batches faster than one copy's latency fed; each needs a device buffer set (raise
                             // max_batches with it) and holds a host slot until its copy is done. 1 until measured
                             // on a GPU host (docs/benchmarks.md).
};

// A Stream whose batches arrive in device memory, DeviceOptions::prefetch batches copied ahead on a side stream.
class DeviceStream {
 public:
  // Registers the stream's segment (DeviceOptions::pin) and creates the side stream and the pool.
  // Errors: kUnavailable (no CUDA device or driver, with the runtime's reason), kInvalidArgument (bad device;
  // prefetch 0; max_batches < prefetch + 1 — checked before any CUDA call).
  static Result<DeviceStream> open(Stream stream, const DeviceOptions& options = {});
  DeviceStream(DeviceStream&&) noexcept;
  DeviceStream& operator=(DeviceStream&&) noexcept;
  ~DeviceStream();

  const StreamInfo& info() const;
  const PinStatus& pin_status() const;
  // Times next() blocked the host on a copy in flight (every stream slot waiting on one); 0 when copies keep up.
  uint64_t host_waits() const;

  // The next batch, its copy ordered before all work enqueued on `consumer` afterwards; then starts copying the
  // ones after it, up to DeviceOptions::prefetch ahead (the first call waits for prefetch + 1 host batches; later
  // calls for about one each). Blocks only on the daemon (and, if the copies lag so far that every slot of the stream waits
  // on one, on the oldest copy). std::nullopt after the last batch; errors as Stream::next(), and
  // kResourceExhausted (not sticky: nothing is lost, call again after releasing one) when the caller holds
  // max_batches - 1 device batches.
  Result<std::optional<DeviceBatch>> next(cudaStream_t consumer);

  // Waits for copies in flight, closes the stream and unregisters the segment. Held DeviceBatches stay valid.
  Status close();

 private:
  explicit DeviceStream(std::unique_ptr<detail::DeviceStreamCore> core);
  std::unique_ptr<detail::DeviceStreamCore> core_;
};

// A Stream whose host batches are page-locked, for a trainer that copies them itself (torch's pin_memory=True then
// .to(device, non_blocking=True)): the segment is registered once at open (as DeviceStream does), so every Tensor
// of every Batch is already pinned (cudaPointerGetAttributes says cudaMemoryTypeHost; torch's is_pinned() is True)
// and a copy out of it is an asynchronous DMA, with no per-batch pin copy (DataLoader's pin-memory thread copies
// every batch into fresh pinned memory).
//
// The one rule: a slot must not go back to the daemon while a copy from it may still be in flight, and an
// asynchronous copy does not keep its source alive. So a batch the trainer is done with is handed back with
// release_after(batch, stream): an event is recorded on `stream` (the stream its copies were enqueued on) and the
// lease is released only once that event has completed (polled by later next() calls without blocking). A Batch
// simply destroyed releases its lease at once, as with Stream (right only when no copy from it is in flight).
//
//   auto pinned = batchd::cuda::PinnedStream::open(std::move(client->open_stream(opts).value())).value();
//   while (auto batch = pinned.next().value()) {
//     cudaMemcpyAsync(dst, batch->find("image")->data, ..., cudaMemcpyHostToDevice, s);   // asynchronous
//     pinned.release_after(std::move(*batch), s);                                           // slot freed later
//   }
//
// Pinning falls back to pageable memory as DeviceStream's does (pin_status() says why; the copies are then
// synchronous but correct). Thread-safety: next() from one thread at a time; release_after() and poll() from any.
// The registration lasts until the PinnedStream is destroyed, after close(): a batch still held after close() stays
// pinned (bindings whose batches may outlive the stream keep the PinnedStream in a shared_ptr).
class PinnedStream {
 public:
  // Registers the stream's segment on `device` (-1: the calling thread's current device) unless `pin` is false.
  // Errors: kUnavailable (no CUDA device or driver, with the runtime's reason; the stream is closed).
  static Result<PinnedStream> open(Stream stream, int device = -1, bool pin = true);
  PinnedStream(PinnedStream&&) noexcept;
  PinnedStream& operator=(PinnedStream&&) noexcept;
  ~PinnedStream();  // as close(), ignoring its error

  const StreamInfo& info() const;
  const PinStatus& pin_status() const;
  int device() const;
  // Times next() waited for a copy in flight because every slot was held by the caller or by copies (0 when the
  // trainer's copies keep up).
  uint64_t host_waits() const;

  // Stream::next() (optionally with its timeout), after releasing the leases whose events have completed. When every
  // slot of the stream is held (Stream::next's kResourceExhausted) and some are only waiting for copies, waits for
  // the oldest copy (cudaEventSynchronize) and tries again, so a trainer that hands every batch back never
  // deadlocks; errors otherwise as Stream::next().
  Result<std::optional<Batch>> next();
  Result<std::optional<Batch>> next(std::chrono::milliseconds timeout);

  // Hands `batch` back: its lease is released once the work enqueued on `stream` until now has completed (nullptr:
  // the legacy default stream). Errors (the event could not be recorded): the lease was released after waiting for
  // the stream's work (or the device's): never early. Also after close(). Releases the leases whose events have
  // completed first.
  Status release_after(Batch batch, cudaStream_t stream);
  // Releases the leases whose events have completed; returns how many still wait.
  size_t poll();

  // Waits for the deferred leases' events, releases them and closes the stream (the daemon frees its segment once
  // every Batch is gone). The segment stays registered until the PinnedStream is destroyed. Idempotent.
  Status close();

 private:
  explicit PinnedStream(std::unique_ptr<detail::PinnedStreamCore> core);
  std::unique_ptr<detail::PinnedStreamCore> core_;
};

}  // namespace batchd::cuda
