// batchd/batch.h — what a trainer reads from a stream (batchd/client.h Stream::next()): a Batch on lease and its
// Tensors, views into the stream's shared-memory segment. Included by batchd/client.h; see there for the whole
// client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace batchd {

namespace detail {
class StreamCore;
}  // namespace detail

// Element types of batch tensors (proto DType; new ones are appended, never renumbered).
enum class DType {
  kUInt8,
  kFloat32,
  kInt64,
  kFloat16,   // IEEE 754 binary16, held as uint16_t bits
  kBFloat16,  // bfloat16 (the upper half of a float32), held as uint16_t bits: float value = bits << 16
  kFloat64,
  kInt32,
  kBool,      // one byte, 0 or 1
  kInt16,
  kInt8,
};

// Bytes per element (uint8/int8/bool 1, float16/bfloat16/int16 2, float32/int32 4, int64/float64 8) and the
// torch-style name ("uint8", "float32", "int64", "float16", "bfloat16", "float64", "int32", "bool", "int16",
// "int8").
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

// One tensor of a batch: a C-contiguous view into the stream's shared-memory segment (read-only unless the stream
// was opened with StreamOptions::writable).
// Valid while the Batch that owns it is alive and not released.
struct Tensor {
  std::string name;            // "image", "label", "index", ...
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;  // [B, ...]: B = Batch::size(), then the per-sample shape
  const void* data = nullptr;  // 256-byte aligned
  size_t nbytes = 0;           // product(shape) * dtype_size(dtype)

  int64_t numel() const;
  // Typed pointer; the caller must match dtype (kUInt8 -> uint8_t, kFloat32 -> float, kInt64 -> int64_t,
  // kFloat16 and kBFloat16 -> uint16_t bits, kFloat64 -> double, kInt32 -> int32_t, kBool -> bool,
  // kInt16 -> int16_t, kInt8 -> int8_t).
  template <typename T>
  const T* data_as() const { return static_cast<const T*>(data); }
};

namespace detail {

// What every kind of batch has: its place in the stream and its tensors (TensorT: Tensor here, cuda::DeviceTensor
// in batchd/cuda.h). Batch and cuda::DeviceBatch add ownership (a lease, device buffers) on top; not used alone.
template <typename TensorT>
class BatchBase {
 public:
  uint64_t epoch() const { return epoch_; }
  uint64_t index() const { return batch_; }        // batch number within the epoch: 0, 1, ...
  uint64_t sequence() const { return sequence_; }  // batch number within the stream, across epochs
  size_t size() const { return num_samples_; }     // samples in this batch (the last one may be short)
  // Samples of this batch that replace bad ones under OnError::kSkip (their `index` entries name the replacement).
  size_t skipped() const { return skipped_; }

  const std::vector<TensorT>& tensors() const { return tensors_; }
  // The tensor called `name`, or nullptr.
  const TensorT* find(std::string_view name) const {
    for (const auto& t : tensors_) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

 protected:
  BatchBase() = default;
  BatchBase(BatchBase&&) noexcept = default;
  BatchBase& operator=(BatchBase&&) noexcept = default;
  ~BatchBase() = default;

  uint64_t sequence_ = 0, epoch_ = 0, batch_ = 0;
  size_t num_samples_ = 0, skipped_ = 0;
  std::vector<TensorT> tensors_;
};

}  // namespace detail

// A batch on lease. Move-only RAII: destroying (or release()-ing) it tells the daemon the slot may be reused.
// Every batch has an `index` tensor (int64 [B]): the dataset sample indices, in batch order. epoch(), index(),
// sequence(), size(), skipped(), tensors() and find() are detail::BatchBase's (above).
// A Batch stays valid after its Stream and Client are destroyed (it keeps the segment mapped), but the slot is
// then only returned to the daemon when the connection closes. Exception: a shared stream's subscriber dropped by
// the lag policy (StreamOptions::share) has its leases revoked; from then on its Batches' tensors may be
// overwritten by the production, and next() returns the failure, never a batch announced before it.
class Batch : public detail::BatchBase<Tensor> {
 public:
  Batch() = default;
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();

  bool valid() const { return core_ != nullptr; }

  // Ends the lease now; tensors() must not be used afterwards. Idempotent.
  void release();

 private:
  friend class detail::StreamCore;
  std::shared_ptr<detail::StreamCore> core_;
};

}  // namespace batchd
