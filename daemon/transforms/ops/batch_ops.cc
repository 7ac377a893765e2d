// The batch family: mixup and cutmix (RandomMixup / RandomCutmix of pytorch/vision's
// references/classification/transforms.py, v0.14), and random_choice over them (torchvision's RandomChoice, as the
// references' train.py combines the two). They run after collate on the whole batch (spec_pipeline.h
// finish_batch); the functions and draws are transforms/kernels/tensor/mixup.h. The label they mix is the one-hot
// [B, num_classes] float32 label the spec's plan gives a stream with batch ops (spec_plan.h).
#include "batchd/wire/convert.h"
#include "transforms/ops/op_registry.h"
#include "transforms/ops/weighted_choice.h"
#include "transforms/kernels/tensor/mixup.h"

namespace batchd::daemon::ops {

namespace {

// The most classes a one-hot label may have: 2^20, beyond any classification set in use (ImageNet-21k has 21,841,
// JFT-300M about 18,000) and small enough that its float32 row (4 MiB) is always laid out with checked sizes.
constexpr double kMaxNumClasses = 1 << 20;

using BatchKernels = std::vector<std::unique_ptr<BatchKernel>>;

// random_choice over batch ops: random.choices(transforms, weights=p), one uniform draw (weighted_choice.h).
class RandomChoiceBatchKernel final : public BatchKernel {
 public:
  RandomChoiceBatchKernel(std::vector<double> weights, BatchKernels kernels)
      : choice_(std::move(weights), kernels.size()), kernels_(std::move(kernels)) {}
  Status run(BatchView& batch, SampleRng& rng) override { return kernels_[choice_.draw(rng)]->run(batch, rng); }

 private:
  WeightedChoice choice_;
  BatchKernels kernels_;
};

Result<ValueType> plan_mix(const wire::Op& op, const ValueType& in, const OpPlanContext& context) {
  const bool float_image = in.kind == Kind::kTensor && (in.dtype == wire::FLOAT32 || in.dtype == wire::FLOAT16 ||
                                                        in.dtype == wire::BFLOAT16);
  if (!float_image) {
    return Error(ErrorCode::kInvalidArgument,
                 op.name() + " needs a float image tensor (float32, float16 or bfloat16), not " +
                     (in.kind == Kind::kTensor ? std::string(wire::dtype_name(in.dtype)) : std::string("an image")) +
                     ": the references mix the float batch of ToTensor/Normalize; end the ops with to_tensor, or "
                     "convert_image_dtype to a float dtype");
  }
  if (number(op, "alpha") <= 0) return param_error("alpha", "must be above 0 (lambda ~ Beta(alpha, alpha))");
  if (!has(op, "num_classes") && context.num_classes <= 0) {
    return param_error("num_classes", "is required: the dataset has no classes of its own (an imagefolder has; a "
                                      "webdataset's .cls labels do not say how many)");
  }
  return in;
}

OpDef mix_def(const char* name, const char* follows, MixKernel::Mode mode) {
  OpDef d;
  d.name = name;
  d.follows = follows;
  d.batch_op = true;
  d.random = true;
  d.params = {
      {.key = "alpha", .type = ParamType::kNumber, .default_value = number_value(1.0), .min = 0,
       .doc = "lambda ~ Beta(alpha, alpha); above 0"},
      {.key = "p", .type = ParamType::kNumber, .default_value = number_value(0.5), .min = 0, .max = 1,
       .doc = "probability that the batch is mixed"},
      {.key = "num_classes", .type = ParamType::kInteger, .presence = Presence::kOptional, .min = 1,
       .max = kMaxNumClasses,
       .doc = "classes of the one-hot label, 1 to 1,048,576 (a 4 MiB float32 row per sample); absent: the "
              "dataset's (an imagefolder's), else required"},
      {.key = "label_smoothing", .type = ParamType::kNumber, .default_value = number_value(0.0), .min = 0, .max = 1,
       .doc = "e of the label y * (1 - e) + e / num_classes (CrossEntropyLoss's label_smoothing)"},
  };
  d.plan = plan_mix;
  d.compile_batch = [mode](const wire::Op& op, const ValueType&) -> Result<std::unique_ptr<BatchKernel>> {
    return std::unique_ptr<BatchKernel>(new MixKernel(mode, MixParams{number(op, "alpha"), number(op, "p")}));
  };
  return d;
}

// random_choice's batch kernel: its ops' batch kernels (the planner checked they are batch ops).
Result<std::unique_ptr<BatchKernel>> compile_choice(const wire::Op& op, const ValueType& image) {
  BatchKernels kernels;
  for (const auto& child : param(op, "ops")->ops().ops()) {
    const OpDef* def = find_op(child.name());
    if (def == nullptr || !def->compile_batch) {
      return Error(ErrorCode::kInvalidArgument, "random_choice: '" + child.name() + "' is not a batch op");
    }
    auto k = def->compile_batch(child, image);
    if (!k.ok()) return k.error();
    kernels.push_back(std::move(k).value());
  }
  return std::unique_ptr<BatchKernel>(new RandomChoiceBatchKernel(numbers(op, "p"), std::move(kernels)));
}

}  // namespace

void add_batch_ops(std::vector<OpDef>* defs) {
  defs->push_back(mix_def("mixup", "RandomMixup of pytorch/vision references/classification/transforms.py (v0.14; transforms.v2.MixUp / CutMix of 0.29 alike)",
                          MixKernel::Mode::kMixup));
  defs->push_back(mix_def("cutmix", "RandomCutmix of pytorch/vision references/classification/transforms.py (v0.14; transforms.v2.MixUp / CutMix of 0.29 alike)",
                          MixKernel::Mode::kCutmix));
  // random_choice is one op for both lists (control_ops.cc plans and runs it over per-sample ops): over batch ops it
  // runs this kernel.
  for (OpDef& def : *defs) {
    if (def.name == "random_choice") def.compile_batch = compile_choice;
  }
}

}  // namespace batchd::daemon::ops
