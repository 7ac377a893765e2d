#include "transforms/spec/spec_pipeline.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <cstring>

#include "transforms/spec/cache_point.h"
#include "transforms/spec/fused_head.h"
#include "transforms/spec/fused_tail.h"
#include "transforms/ops/op_registry.h"
#include "transforms/ops/spec_plan.h"

namespace batchd::daemon {

using ops::Kind;
using ops::SampleKernel;
using Clock = std::chrono::steady_clock;
using Kernels = std::vector<std::unique_ptr<SampleKernel>>;

namespace {

class SpecPipeline final : public Pipeline {
 public:
  SpecPipeline(std::shared_ptr<const Dataset> dataset, ops::PlannedSpec planned)
      : dataset_(std::move(dataset)), images_(*dataset_->images()), planned_(std::move(planned)) {}

  Status compile(const CacheBinding& binding) {
    // The cache op is a point between two steps, not a step: the steps are the ops without it, and cache_at_ is
    // where it was (the number of ops before it).
    steps_ = planned_.canonical;
    CachePrefix prefix;
    if (planned_.cache_at >= 0) {
      steps_.mutable_ops()->DeleteSubrange(planned_.cache_at, 1);
      prefix = cache_prefix(planned_.canonical, planned_.cache_at);
      cache_at_ = prefix.point;
    }
    const auto& o = steps_.ops();
    n_ = o.size();
    wire::PipelineSpec before_point;  // the head fuses only ops before the point
    for (int i = 0; i < (cache_at_ >= 0 ? cache_at_ : n_); ++i) *before_point.add_ops() = o[i];
    int used = 0;
    auto head = fused_head(before_point, &times_, &used);
    if (!head.ok()) return head.error();
    head_ = std::move(head).value();
    used_ = used;
    has_tail_ = find_tail(o, &tail_);
    if (has_tail_ && cache_at_ > tail_.first && cache_at_ < tail_.end) has_tail_ = false;  // the point splits it
    const int middle_end = has_tail_ ? tail_.first : o.size();
    ops::ValueType type{.kind = Kind::kEncoded};
    const int64_t classes = planned_.num_classes;
    CompileList compile_list = [&](const wire::OpList& list, const ops::ValueType& in) -> Result<Kernels> {
      Kernels kernels;
      ops::ValueType t = in;
      for (const auto& op : list.ops()) {
        auto k = compile_op(op, t, compile_list);
        if (!k.ok()) return k.error();
        kernels.push_back(std::move(k).value());
        auto next = ops::plan_op_type(op, t, classes);
        if (!next.ok()) return next.error();
        t = *next;
      }
      return kernels;
    };
    std::optional<ops::ValueType> at_point;
    for (int i = 0; i < o.size(); ++i) {
      if (i == cache_at_) at_point = type;
      if (i >= used && (i < middle_end || (has_tail_ && i >= tail_.end))) {
        auto k = compile_op(o[i], type, compile_list);
        if (!k.ok()) return k.error();
        (i < middle_end ? middle_ : after_tail_).push_back(std::move(k).value());
      }
      // The plan's type of step i (the cache op, which changes nothing, is not a step).
      type = planned_.op_types[planned_.cache_at >= 0 && i >= planned_.cache_at ? i + 1 : i];
      // Fixed-size values reserved now (op.h); a tensor only when kernels hold it (else the tail writes the slot).
      if (type.kind == Kind::kImage || !has_tail_ || !tail_.to_slot) ops::reserve_for(type, &sample_);
    }
    if (cache_at_ >= 0) {
      const auto kind = cache_at_ == n_ ? CachePoint::Kind::kSlot
                        : at_point->kind == ops::Kind::kImage ? CachePoint::Kind::kImage
                                                              : CachePoint::Kind::kTensor;
      cache_.emplace(binding, prefix.id, kind,
                     planned_.tensors[0].sample_bytes());
    }
    for (const auto& op : planned_.canonical.batch_ops()) {
      auto k = compile_batch(op);
      if (!k.ok()) return k.error();
      batch_.push_back(std::move(k).value());
    }
    return ok_status();
  }

  const std::vector<TensorDesc>& tensors() const override { return planned_.tensors; }
  StageTimes take_stage_times() override {
    if (cache_) {
      const CacheCounts c = cache_->take_counts();
      times_.cache_hits = c.hits;
      times_.cache_fills = c.fills;
      times_.cache_uncached = c.uncached;
    }
    return std::exchange(times_, StageTimes{});
  }
  bool whole_batches() const override { return !batch_.empty(); }
  uint64_t reserved_bytes() const override { return ops::reserved_bytes(sample_) + bytes_.capacity(); }

  Status run(std::span<const int64_t> indices, char* slot, std::span<const uint64_t> offsets,
             const BatchContext& context) override {
    const uint64_t image_bytes = planned_.tensors[0].sample_bytes();
    const uint64_t label_bytes = planned_.tensors[1].sample_bytes();
    for (size_t i = 0; i < indices.size(); ++i) {
      const int64_t idx = indices[i];
      if (idx < 0 || static_cast<uint64_t>(idx) >= dataset_->size()) {
        return Error(ErrorCode::kInternal, "sample index " + std::to_string(idx) + " out of range");
      }
      context.progress.at(idx);
      int64_t label = 0;
      const uint32_t copy = i < context.copies.size() ? context.copies[i] : 0;
      BATCHD_RETURN_IF_ERROR(make_sample(static_cast<uint64_t>(idx), copy, context,
                                         slot + offsets[0] + i * image_bytes, &label));
      BATCHD_RETURN_IF_ERROR(write_label(label, slot + offsets[1] + i * label_bytes));
    }
    return ok_status();
  }

  Status finish_batch(char* slot, std::span<const uint64_t> offsets, uint32_t samples,
                      const BatchContext& context) override {
    if (batch_.empty()) return ok_status();
    ops::BatchView view;
    view.samples = samples;
    view.images = slot + offsets[0];
    view.image_dtype = planned_.image.dtype;
    view.height = planned_.image.height;
    view.width = planned_.image.width;
    view.image_sample_values = static_cast<uint64_t>(view.channels) * view.height * view.width;
    view.hwc = planned_.image.hwc;
    view.labels = reinterpret_cast<float*>(slot + offsets[1]);
    view.num_classes = planned_.num_classes;
    // The batch's own stream of draws, apart from every sample's (seeded by index, not batch).
    SampleRng rng(context.seed ^ 0x6d69787570ull, context.epoch, -1 - static_cast<int64_t>(context.batch));
    for (auto& k : batch_) BATCHD_RETURN_IF_ERROR(k->run(view, rng));
    return ok_status();
  }

 private:
  using CompileList = ops::CompileList;

  static Result<std::unique_ptr<SampleKernel>> compile_op(const wire::Op& op, const ops::ValueType& in,
                                                          const CompileList& compile_list) {
    const ops::OpDef* def = ops::find_op(op.name());
    if (def == nullptr || !def->compile) {
      return Error(ErrorCode::kInvalidArgument, "op '" + op.name() + "' has no per-sample kernel");
    }
    return def->compile(op, in, compile_list);
  }

  Result<std::unique_ptr<ops::BatchKernel>> compile_batch(const wire::Op& op) {
    const ops::OpDef* def = ops::find_op(op.name());
    if (def == nullptr || !def->compile_batch) {
      return Error(ErrorCode::kInvalidArgument, "op '" + op.name() + "' has no batch kernel");
    }
    return def->compile_batch(op, planned_.image);
  }

  // `copy`: which repeated_aug copy of idx this is (0 without repeated_aug); it seeds the draws with idx.
  Status make_sample(uint64_t idx, uint32_t copy, const BatchContext& context, char* dst, int64_t* label) {
    auto t = Clock::now();
    SampleRng rng(context.seed, context.epoch, static_cast<int64_t>(idx), copy);
    if (!cache_) {
      BATCHD_RETURN_IF_ERROR(read(idx, label, t));
      return run_steps(0, n_, rng, dst, t);
    }
    // The steps before the point draw nothing (the plan refuses random ones): rng is where the steps after it
    // expect it whether the value is read from the cache or computed.
    const FileStamp stamp = images_.stamp(idx);
    if (cache_->load(idx, stamp, &sample_, dst, label)) {
      times_.read_ns += stage_ns(t);
      images_.sample_name(idx, &name_);  // the steps after the point name the sample in their errors
      sample_.name = &name_;
      return run_steps(cache_at_, n_, rng, dst, t);
    }
    BATCHD_RETURN_IF_ERROR(read(idx, label, t));
    BATCHD_RETURN_IF_ERROR(run_steps(0, cache_at_, rng, dst, t));
    cache_->store(idx, stamp, sample_, dst, *label);
    return run_steps(cache_at_, n_, rng, dst, t);
  }

  Status read(uint64_t idx, int64_t* label, Clock::time_point& t) {
    BATCHD_RETURN_IF_ERROR(images_.read_image(idx, &bytes_, label));
    times_.read_ns += stage_ns(t);
    images_.sample_name(idx, &name_);
    sample_.bytes = bytes_;
    sample_.name = &name_;
    return ok_status();
  }

  // Runs steps [from, to) on sample_ (from 0: its file's bytes are read); to == n_: writes the sample's row at dst.
  Status run_steps(int from, int to, SampleRng& rng, char* dst, Clock::time_point& t) {
    if (from == to) return ok_status();
    if (from == 0 && head_) {
      BATCHD_RETURN_IF_ERROR(head_->run(sample_, rng));  // times itself (decode, resize)
      t = Clock::now();
    }
    const int middle_end = has_tail_ ? tail_.first : n_;
    for (int i = std::max(from, used_); i < std::min(to, middle_end); ++i) {
      auto& k = middle_[i - used_];
      if (k) BATCHD_RETURN_IF_ERROR(k->run(sample_, rng));
      if (i == 0 && !head_) times_.decode_ns += stage_ns(t);
    }
    times_.resize_ns += stage_ns(t);
    if (has_tail_ && from <= tail_.first && to >= tail_.end) {
      bool flip_h = false, flip_v = false;
      for (const auto& f : tail_.flips) {
        if (rng.uniform(0.0, 1.0) < f.p) (f.horizontal ? flip_h : flip_v) ^= true;  // torch.rand(1) < p
      }
      if (tail_.to_slot) {  // the tail ends the steps (to == n_)
        if (tail_.dtype == wire::FLOAT32) {
          tail_.write_float(sample_.image, flip_h, flip_v, reinterpret_cast<float*>(dst));
        } else if (tail_.dtype == wire::FLOAT16 || tail_.dtype == wire::BFLOAT16) {
          tail_.write(sample_.image, flip_h, flip_v, reinterpret_cast<uint16_t*>(dst));
        } else {
          tail_.write(sample_.image, flip_h, flip_v, reinterpret_cast<uint8_t*>(dst));
        }
        times_.normalize_ns += stage_ns(t);
        return ok_status();
      }
      sample_.channels = 3;
      sample_.height = sample_.image.height;
      sample_.width = sample_.image.width;
      sample_.tensor.resize(static_cast<size_t>(3) * sample_.height * sample_.width);
      tail_.write_float(sample_.image, flip_h, flip_v, sample_.tensor.data());
    }
    if (has_tail_) {
      for (int i = std::max(from, tail_.end); i < to; ++i) {
        auto& k = after_tail_[i - tail_.end];
        if (k) BATCHD_RETURN_IF_ERROR(k->run(sample_, rng));
      }
    }
    return to == n_ ? write_from_tensor(dst, &t) : ok_status();
  }

  Status write_from_tensor(char* dst, Clock::time_point* t = nullptr) {
    write_tensor(sample_.tensor, planned_.image.dtype, dst);
    if (t != nullptr) times_.normalize_ns += stage_ns(*t);
    return ok_status();
  }

  Status write_label(int64_t label, char* dst) {
    if (planned_.num_classes == 0) {
      std::memcpy(dst, &label, sizeof label);
      return ok_status();
    }
    if (label < 0 || label >= planned_.num_classes) {
      return Error(ErrorCode::kDataError, name_ + ": label " + std::to_string(label) + " is outside [0, num_classes = " +
                                              std::to_string(planned_.num_classes) + ") of the batch ops' one-hot "
                                              "label; set num_classes to the dataset's class count");
    }
    // One-hot with label smoothing: y * (1 - e) + e / K (torch.nn.CrossEntropyLoss's label_smoothing target).
    const auto k = static_cast<float>(planned_.num_classes);
    const auto e = static_cast<float>(planned_.label_smoothing);
    auto* row = reinterpret_cast<float*>(dst);
    for (int64_t c = 0; c < planned_.num_classes; ++c) row[c] = e / k;
    row[label] = (1.0f - e) + e / k;
    return ok_status();
  }

  std::shared_ptr<const Dataset> dataset_;  // keeps images_ alive
  const ImageSamples& images_;
  ops::PlannedSpec planned_;
  wire::PipelineSpec steps_;  // the canonical ops without the cache op
  int n_ = 0, used_ = 0;      // steps; steps the head replaces
  int cache_at_ = -1;         // the cache point: the number of steps before it; -1: none
  std::optional<CachePoint> cache_;
  std::unique_ptr<SampleKernel> head_;
  Kernels middle_, after_tail_;
  std::vector<std::unique_ptr<ops::BatchKernel>> batch_;
  FusedTail tail_;
  bool has_tail_ = false;
  ops::Sample sample_;
  std::vector<uint8_t> bytes_;
  std::string name_;
  StageTimes times_;
};

}  // namespace

Result<std::unique_ptr<Pipeline>> make_decode_pipeline(ops::PlannedSpec planned, std::shared_ptr<const Dataset> dataset,
                                                       const CacheBinding& cache) {
  if (dataset->images() == nullptr) {
    return Error(ErrorCode::kInvalidArgument, "a pipeline of ops needs an image dataset (imagefolder or webdataset); "
                                              "'" + dataset->name() + "' is " + dataset->format());
  }
  auto pipeline = std::make_unique<SpecPipeline>(std::move(dataset), std::move(planned));
  BATCHD_RETURN_IF_ERROR(pipeline->compile(cache));
  return std::unique_ptr<Pipeline>(std::move(pipeline));
}

}  // namespace batchd::daemon
