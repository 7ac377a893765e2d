#include "transforms/pipeline.h"

#include <csignal>
#include <cstdlib>

#include "transforms/fmnist_pipeline.h"
#include "transforms/vision_pipeline.h"

namespace batchd::daemon {

void SampleProgress::crash() {
  ::signal(SIGSEGV, SIG_DFL);
  ::raise(SIGSEGV);
  std::abort();
}

size_t dtype_size(wire::DType dtype) {
  switch (dtype) {
    case wire::UINT8: return 1;
    case wire::FLOAT32: return 4;
    case wire::INT64: return 8;
    default: return 0;
  }
}

uint64_t TensorDesc::sample_bytes() const {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : sample_shape) n *= static_cast<uint64_t>(d);
  return n;
}

Result<std::unique_ptr<Pipeline>> make_pipeline(const std::string& name, std::shared_ptr<const Dataset> dataset,
                                                const PipelineOptions& options) {
  if (name == "fmnist" || name == "fmnist_u8") {
    return make_fmnist_pipeline(name == "fmnist" ? FmnistOutput::kNormalizedFloat : FmnistOutput::kRawUint8,
                                std::move(dataset));
  }
  if (name == "train224" || name == "train") return make_vision_pipeline(VisionMode::kTrain, true, dataset, options);
  if (name == "train224_u8" || name == "train_u8") {
    return make_vision_pipeline(VisionMode::kTrain, false, dataset, options);
  }
  if (name == "val224" || name == "val") return make_vision_pipeline(VisionMode::kVal, true, dataset, options);
  return Error(ErrorCode::kNotFound, "unknown pipeline '" + name +
                                         "' (known: fmnist, fmnist_u8, train224, train224_u8, val224)");
}

}  // namespace batchd::daemon
