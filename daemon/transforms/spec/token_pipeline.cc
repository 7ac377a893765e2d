#include "transforms/spec/token_pipeline.h"

#include <chrono>
#include <utility>

#include "transforms/ops/token_window.h"

namespace batchd::daemon {

namespace {

// Two plain loops the compiler vectorizes (zero-extending loads, 64-bit stores; built with -O3, see
// daemon/CMakeLists.txt); `__restrict` tells it the outputs do not alias the window or each other.
template <typename Token>
void widen(const Token* __restrict window, uint32_t t, int64_t* __restrict inputs, int64_t* __restrict targets) {
  for (uint32_t k = 0; k < t; ++k) inputs[k] = static_cast<int64_t>(window[k]);
  for (uint32_t k = 0; k < t; ++k) targets[k] = static_cast<int64_t>(window[k + 1]);
}

class LmPipeline final : public Pipeline {
 public:
  LmPipeline(std::shared_ptr<const Dataset> dataset, const wire::LmOptions& options)
      : dataset_(std::move(dataset)),
        windows_(*dataset_->tokens()),
        t_(options.seq_len()),
        stride_(options.sampling() == wire::RANDOM_WINDOWS ? 1 : options.seq_len()),
        samples_(lm_samples(windows_, options)) {
    const auto t = static_cast<int64_t>(t_);
    tensors_ = {{"input_ids", wire::INT64, {t}}, {"targets", wire::INT64, {t}}};
  }

  const std::vector<TensorDesc>& tensors() const override { return tensors_; }

  Status run(std::span<const int64_t> indices, char* slot, std::span<const uint64_t> offsets,
             const BatchContext& context) override {
    auto start = std::chrono::steady_clock::now();
    const uint64_t present = windows_.tokens_present();  // one stat per batch: windows cut off by a truncation
    times_.read_ns += stage_ns(start);
    auto* inputs = reinterpret_cast<int64_t*>(slot + offsets[0]);
    auto* targets = reinterpret_cast<int64_t*>(slot + offsets[1]);
    const TokenWindows::Dtype dtype = windows_.dtype();
    for (size_t i = 0; i < indices.size(); ++i) {
      const int64_t idx = indices[i];
      if (idx < 0 || static_cast<uint64_t>(idx) >= samples_) {
        return Error(ErrorCode::kInternal, "sample index " + std::to_string(idx) + " out of range for dataset '" +
                                               dataset_->name() + "'");
      }
      context.progress.at(idx);
      const uint64_t first = static_cast<uint64_t>(idx) * stride_;
      if (first + t_ + 1 > present) return windows_.window_missing(first, t_ + 1);
      widen_window(windows_.token(first), dtype, t_, inputs + i * t_, targets + i * t_);
    }
    times_.normalize_ns += stage_ns(start);
    return ok_status();
  }

  StageTimes take_stage_times() override { return std::exchange(times_, StageTimes{}); }

 private:
  std::shared_ptr<const Dataset> dataset_;  // keeps windows_ alive
  const TokenWindows& windows_;
  const uint32_t t_;
  const uint64_t stride_;   // tokens between the starts of samples i and i + 1
  const uint64_t samples_;  // valid indices: [0, samples_)
  std::vector<TensorDesc> tensors_;
  StageTimes times_;
};

}  // namespace

void widen_window(const void* window, TokenWindows::Dtype dtype, uint32_t t, int64_t* inputs, int64_t* targets) {
  if (dtype == TokenWindows::Dtype::kUint16) {
    widen(static_cast<const uint16_t*>(window), t, inputs, targets);
  } else {
    widen(static_cast<const uint32_t*>(window), t, inputs, targets);
  }
}

Result<std::unique_ptr<Pipeline>> make_token_pipeline(const wire::LmOptions& resolved,
                                                      std::shared_ptr<const Dataset> dataset) {
  if (dataset->tokens() == nullptr || resolved.seq_len() == 0) {
    return Error(ErrorCode::kInvalidArgument, "a spec that starts with token_window needs a token dataset (format = "
                                              "\"tokens\") and a resolved seq_len; '" + dataset->name() + "' is " +
                                              dataset->format());
  }
  return std::unique_ptr<Pipeline>(new LmPipeline(std::move(dataset), resolved));
}

}  // namespace batchd::daemon
