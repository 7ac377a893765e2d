// device_pool.cc — DeviceBatch and DevicePool, the public faces of PoolCore (pool_core.h).
#include <utility>

#include "pool_core.h"

namespace batchd::cuda {

// ---------------------------------------------------------------- DeviceBatch

DeviceBatch::DeviceBatch(DeviceBatch&& other) noexcept { *this = std::move(other); }

DeviceBatch& DeviceBatch::operator=(DeviceBatch&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::move(other.pool_);
    set_ = std::exchange(other.set_, -1);
    ready_ = std::exchange(other.ready_, nullptr);
    stream_ = other.stream_;
    BatchBase::operator=(std::move(other));
  }
  return *this;
}

DeviceBatch::~DeviceBatch() { release(); }

void DeviceBatch::release() {
  if (!pool_) return;
  pool_->give_back(set_, stream_);
  pool_.reset();
  tensors_.clear();
}

// ---------------------------------------------------------------- DevicePool

DevicePool::DevicePool(std::shared_ptr<detail::PoolCore> core) : core_(std::move(core)) {}
DevicePool::DevicePool(DevicePool&&) noexcept = default;
DevicePool& DevicePool::operator=(DevicePool&&) noexcept = default;
DevicePool::~DevicePool() {
  if (core_) core_->drain();
}

Result<DevicePool> DevicePool::create(const StreamInfo& stream, int device, uint32_t max_batches) {
  if (max_batches == 0) return Error(ErrorCode::kInvalidArgument, "DevicePool: max_batches must be at least 1");
  auto d = detail::resolve_device(device);
  if (!d.ok()) return d.error();
  return DevicePool(std::make_shared<detail::PoolCore>(*d, max_batches, stream.batch_size));
}

Result<DeviceBatch> DevicePool::to_device(Batch batch, cudaStream_t stream) {
  return core_->to_device(std::move(batch), stream);
}
size_t DevicePool::poll() { return core_->poll(); }
bool DevicePool::has_free_set() const { return core_->has_free_set(); }
bool DevicePool::wait_oldest() { return core_->wait_oldest(); }
int DevicePool::device() const { return core_->device(); }

}  // namespace batchd::cuda
