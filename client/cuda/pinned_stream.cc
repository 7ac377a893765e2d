// pinned_stream.cc — PinnedStream: host batches in a page-locked segment, each lease released only after the
// trainer's copies from it (an event on the stream it names) have completed. Contract in batchd/cuda.h.
#include <atomic>

#include "batchd/cuda.h"
#include "cuda_util.h"
#include "lease_queue.h"
#include "segment_pin.h"

namespace batchd::cuda {

namespace detail {

class PinnedStreamCore final {
 public:
  PinnedStreamCore(Stream stream, int device, bool pin)
      : stream_(std::move(stream)), device_(device), leases_(device), pin_(stream_.segment(), device, pin) {}
  // Copies in flight read the segment: release (and wait for) them before it is unregistered.
  ~PinnedStreamCore() {
    leases_.drain();
    pin_.reset();
  }

  Result<std::optional<Batch>> next(std::optional<std::chrono::milliseconds> timeout) {
    leases_.poll();
    while (true) {
      auto r = timeout ? stream_.next(*timeout) : stream_.next();
      // Every slot held: by the caller (its error stands) or by leases waiting for copies (wait for the oldest).
      if (r.ok() || r.error().code() != ErrorCode::kResourceExhausted || !leases_.wait_oldest()) return r;
      host_waits_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  Status release_after(Batch batch, cudaStream_t stream) {
    leases_.poll();
    return leases_.defer(std::move(batch), stream);
  }

  size_t poll() { return leases_.poll(); }

  Status close() {
    leases_.drain();
    return stream_.close();
  }

  const StreamInfo& info() const { return stream_.info(); }
  const PinStatus& pin_status() const { return pin_.status(); }
  int device() const { return device_; }
  uint64_t host_waits() const { return host_waits_.load(std::memory_order_relaxed); }

 private:
  Stream stream_;
  const int device_;
  LeaseQueue leases_;
  SegmentPin pin_;  // after leases_: destroyed first only once the destructor has drained them
  std::atomic<uint64_t> host_waits_{0};
};

}  // namespace detail

Result<PinnedStream> PinnedStream::open(Stream stream, int device, bool pin) {
  auto d = detail::resolve_device(device);
  if (!d.ok()) return d.error();  // `stream` is destroyed, and so closed, on return
  return PinnedStream(std::make_unique<detail::PinnedStreamCore>(std::move(stream), *d, pin));
}

PinnedStream::PinnedStream(std::unique_ptr<detail::PinnedStreamCore> core) : core_(std::move(core)) {}
PinnedStream::PinnedStream(PinnedStream&&) noexcept = default;
PinnedStream& PinnedStream::operator=(PinnedStream&&) noexcept = default;
PinnedStream::~PinnedStream() {
  if (core_ != nullptr) (void)core_->close();
}

const StreamInfo& PinnedStream::info() const { return core_->info(); }
const PinStatus& PinnedStream::pin_status() const { return core_->pin_status(); }
int PinnedStream::device() const { return core_->device(); }
uint64_t PinnedStream::host_waits() const { return core_->host_waits(); }
Result<std::optional<Batch>> PinnedStream::next() { return core_->next(std::nullopt); }
Result<std::optional<Batch>> PinnedStream::next(std::chrono::milliseconds timeout) { return core_->next(timeout); }
Status PinnedStream::release_after(Batch batch, cudaStream_t stream) {
  return core_->release_after(std::move(batch), stream);
}
size_t PinnedStream::poll() { return core_->poll(); }
Status PinnedStream::close() { return core_->close(); }

}  // namespace batchd::cuda
