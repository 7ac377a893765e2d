// device_stream.cc — DeviceStream: the segment registered once, DeviceOptions::prefetch batches copied ahead on a
// side stream.
#include <dlfcn.h>

#include <deque>
#include <cstdio>
#include <optional>

#include "batchd/cuda.h"
#include "cuda_util.h"
#include "segment_pin.h"

namespace batchd::cuda {

Result<int> device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it for the caller's next CUDA call
    // Without any driver the runtime says "driver version is insufficient": name the real cause.
    void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (driver == nullptr) driver = ::dlopen("libcuda.so.1", RTLD_LAZY);
    const char* why = driver == nullptr ? "; no NVIDIA driver is installed (libcuda.so.1 not found)" : "";
    if (driver != nullptr) ::dlclose(driver);
    return detail::cuda_error("no CUDA device: cudaGetDeviceCount", e, ErrorCode::kUnavailable,
                              std::string(why) +
                                  "; run on a machine with an NVIDIA GPU and driver, or read batches on the host");
  }
  if (n == 0) return Error(ErrorCode::kUnavailable, "no CUDA device: cudaGetDeviceCount found 0 (CUDA_VISIBLE_DEVICES?)");
  return n;
}

namespace detail {

class DeviceStreamCore final {
 public:
  DeviceStreamCore(Stream stream, int device, DevicePool pool, uint32_t prefetch)
      : stream_(std::move(stream)), device_(device), pool_(std::move(pool)), prefetch_(prefetch) {}
  ~DeviceStreamCore() { (void)close(); }

  Status start(const DeviceOptions& options) {
    pin_ = SegmentPin(stream_.segment(), device_, options.pin);
    DeviceGuard guard(device_);
    if (cudaError_t e = cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking); e != cudaSuccess) {
      side_ = nullptr;
      return cuda_error("cudaStreamCreateWithFlags", e);
    }
    return ok_status();
  }

  const StreamInfo& info() const { return stream_.info(); }
  const PinStatus& pin_status() const { return pin_.status(); }
  uint64_t host_waits() const { return host_waits_; }

  Result<std::optional<DeviceBatch>> next(cudaStream_t consumer) {
    if (closed_) return Error(ErrorCode::kInvalidArgument, "DeviceStream::next after close()");
    if (ahead_.empty() && !ended_ && !deferred_) {
      if (Status st = prefetch(); !st.ok()) return st.error();  // not sticky: no buffer set free yet
    }
    if (ahead_.empty()) {
      if (deferred_) return *deferred_;
      return std::optional<DeviceBatch>();
    }
    DeviceBatch out = std::move(ahead_.front());
    ahead_.pop_front();
    {
      DeviceGuard guard(device_);
      if (cudaError_t e = cudaStreamWaitEvent(consumer, out.ready_event(), 0); e != cudaSuccess) {
        deferred_ = cuda_error("cudaStreamWaitEvent(consumer stream)", e);  // the batch is lost: the stream fails
        ahead_.clear();  // and stays failed: no later batch may be delivered past the lost one
        return *deferred_;
      }
    }
    out.set_stream(consumer);
    // Batches N+1 .. N+prefetch copy on the side stream while the trainer computes on this one; if every buffer
    // set is held, the next call retries.
    while (ahead_.size() < prefetch_ && !ended_ && !deferred_ && prefetch().ok()) {
    }
    return std::optional<DeviceBatch>(std::move(out));
  }

  Status close() {
    if (closed_) return ok_status();
    closed_ = true;
    ahead_.clear();
    DeviceGuard guard(device_);
    while (pool_.wait_oldest()) {  // copies still reading the segment
    }
    const Status st = stream_.close();
    pin_.reset();
    if (side_ != nullptr) (void)cudaStreamDestroy(side_);
    side_ = nullptr;
    return st;
  }

 private:
  // Fetches the next host batch and starts its copy. kResourceExhausted, consuming nothing, when no device buffer
  // set is free; the stream's own errors (and a copy that failed after its lease was taken) are kept in deferred_
  // and end the stream.
  Status prefetch() {
    if (!pool_.has_free_set()) {
      return Error(ErrorCode::kResourceExhausted,
                   "all device buffer sets are held (DeviceOptions::max_batches): release a DeviceBatch before "
                   "asking for the next, or raise max_batches");
    }
    // Every slot of the stream held by copies in flight: wait for the oldest (copies lagging this far behind
    // the trainer is the only case that blocks on the GPU).
    while (pool_.poll() >= info().depth && pool_.wait_oldest()) ++host_waits_;
    auto host = stream_.next();
    if (!host.ok()) {
      deferred_ = host.error();
      return ok_status();
    }
    if (!*host) {
      ended_ = true;
      return ok_status();
    }
    DeviceGuard guard(device_);
    auto dev = pool_.to_device(std::move(**host), side_);
    if (!dev.ok()) {
      deferred_ = dev.error();
      return ok_status();
    }
    ahead_.push_back(std::move(*dev));
    return ok_status();
  }

  Stream stream_;
  const int device_;
  DevicePool pool_;
  SegmentPin pin_;
  cudaStream_t side_ = nullptr;
  const uint32_t prefetch_;       // DeviceOptions::prefetch
  std::deque<DeviceBatch> ahead_;  // copies started, oldest first
  std::optional<Error> deferred_;
  bool ended_ = false, closed_ = false;
  uint64_t host_waits_ = 0;
};

}  // namespace detail

Result<DeviceStream> DeviceStream::open(Stream stream, const DeviceOptions& options) {
  if (options.prefetch < 1) {
    return Error(ErrorCode::kInvalidArgument, "DeviceOptions::prefetch must be at least 1 (batches copied ahead)");
  }
  if (options.max_batches < 2 || options.max_batches < options.prefetch + 1) {
    return Error(ErrorCode::kInvalidArgument,
                 "DeviceOptions::max_batches must be at least 2 and at least prefetch + 1 (" +
                     std::to_string(options.prefetch) + " batches copying ahead, one held by the trainer), not " +
                     std::to_string(options.max_batches));
  }
  auto pool = DevicePool::create(stream.info(), options.device, options.max_batches);
  if (!pool.ok()) return pool.error();
  const int device = pool->device();
  auto core = std::make_unique<detail::DeviceStreamCore>(std::move(stream), device, std::move(pool).value(),
                                                         options.prefetch);
  if (Status st = core->start(options); !st.ok()) return st.error();
  return DeviceStream(std::move(core));
}

DeviceStream::DeviceStream(std::unique_ptr<detail::DeviceStreamCore> core) : core_(std::move(core)) {}
DeviceStream::DeviceStream(DeviceStream&&) noexcept = default;
DeviceStream& DeviceStream::operator=(DeviceStream&&) noexcept = default;
DeviceStream::~DeviceStream() = default;

const StreamInfo& DeviceStream::info() const { return core_->info(); }
const PinStatus& DeviceStream::pin_status() const { return core_->pin_status(); }
uint64_t DeviceStream::host_waits() const { return core_->host_waits(); }
Result<std::optional<DeviceBatch>> DeviceStream::next(cudaStream_t consumer) { return core_->next(consumer); }
Status DeviceStream::close() { return core_->close(); }

}  // namespace batchd::cuda
