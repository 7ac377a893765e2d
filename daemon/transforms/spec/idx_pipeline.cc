#include "transforms/spec/idx_pipeline.h"

#include <array>
#include <cstring>

#include "data/idx_dataset.h"
#include "transforms/ops/tensor_ops.h"
#include "transforms/spec/fused_tail.h"  // write_tensor

namespace batchd::daemon {

namespace {

class IdxPipeline final : public Pipeline {
 public:
  IdxPipeline(std::shared_ptr<const IdxDataset> dataset, ops::PlannedSpec planned)
      : dataset_(std::move(dataset)), planned_(std::move(planned)), dtype_(planned_.image.dtype) {
    // The pointwise ops after idx_image, composed over the 256 pixel values as the image executor's kernels compute
    // them one after the other (ToTensorKernel's table, then PointwiseKernel).
    std::array<float, 256> values{};
    for (int v = 0; v < 256; ++v) values[v] = static_cast<float>(v);
    wire::DType dtype = wire::UINT8;
    for (const auto& op : planned_.canonical.ops()) {
      if (!ops::is_pointwise(op)) continue;  // idx_image, layout (1 channel: CHW and HWC are the same bytes)
      const ops::PointwiseStep step = ops::pointwise_step(op, dtype);
      for (float& x : values) x = step(0, x);
      dtype = step.out;
    }
    identity_ = dtype_ == wire::UINT8;
    for (int v = 0; v < 256; ++v) identity_ = identity_ && values[v] == static_cast<float>(v);
    std::vector<float> one(1);
    for (int v = 0; v < 256; ++v) {  // the output's bytes of each pixel value, as the image executor writes them
      one[0] = values[v];
      write_tensor(one, dtype_, reinterpret_cast<char*>(&table_[v]));
    }
  }

  const std::vector<TensorDesc>& tensors() const override { return planned_.tensors; }

  Status run(std::span<const int64_t> indices, char* slot, std::span<const uint64_t> offsets,
             const BatchContext& context) override {
    const size_t pixels = size_t{dataset_->rows()} * dataset_->cols();
    auto* labels = reinterpret_cast<int64_t*>(slot + offsets[1]);
    const uint64_t n = dataset_->size();
    for (size_t i = 0; i < indices.size(); ++i) {
      const int64_t idx = indices[i];
      if (idx < 0 || static_cast<uint64_t>(idx) >= n) {
        return Error(ErrorCode::kInternal, "sample index " + std::to_string(idx) + " out of range for dataset '" +
                                               dataset_->name() + "'");
      }
      context.progress.at(idx);
      const uint8_t* src = dataset_->image(static_cast<uint64_t>(idx));
      char* dst = slot + offsets[0];
      switch (dtype_) {
        case wire::FLOAT32: write(src, pixels, reinterpret_cast<float*>(dst) + i * pixels); break;
        case wire::FLOAT16:
        case wire::BFLOAT16: write(src, pixels, reinterpret_cast<uint16_t*>(dst) + i * pixels); break;
        default:
          if (identity_) {
            std::memcpy(dst + i * pixels, src, pixels);
          } else {
            write(src, pixels, reinterpret_cast<uint8_t*>(dst) + i * pixels);
          }
      }
      labels[i] = dataset_->label(static_cast<uint64_t>(idx));
    }
    return ok_status();
  }

 private:
  // One table load per pixel: the T at the start of each entry of table_ is the value's bytes.
  template <typename T>
  void write(const uint8_t* src, size_t pixels, T* dst) const {
    for (size_t p = 0; p < pixels; ++p) std::memcpy(&dst[p], &table_[src[p]], sizeof(T));
  }

  std::shared_ptr<const IdxDataset> dataset_;
  ops::PlannedSpec planned_;
  wire::DType dtype_;
  bool identity_ = false;                // uint8 output equal to the input: a memcpy per image
  std::array<uint32_t, 256> table_{};    // each value's output bytes (1, 2 or 4 of them)
};

}  // namespace

Result<std::unique_ptr<Pipeline>> make_idx_pipeline(ops::PlannedSpec planned, std::shared_ptr<const Dataset> dataset) {
  auto idx = std::dynamic_pointer_cast<const IdxDataset>(dataset);
  if (!idx) {
    return Error(ErrorCode::kInvalidArgument, "a spec that starts with idx_image needs an idx dataset; '" +
                                                  dataset->name() + "' is " + dataset->format());
  }
  return std::unique_ptr<Pipeline>(new IdxPipeline(std::move(idx), std::move(planned)));
}

}  // namespace batchd::daemon
