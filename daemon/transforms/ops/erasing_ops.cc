// The erasing family: random_erasing (torchvision 0.14's RandomErasing) on a float tensor. The op's functions and
// draws are transforms/kernels/tensor/erasing.h; here its schema, type rule and kernel.
#include "batchd/wire/convert.h"
#include "transforms/ops/op_registry.h"
#include "transforms/ops/tensor_ops.h"
#include "transforms/kernels/tensor/erasing.h"

namespace batchd::daemon::ops {

namespace {

// ratio's bounds: float32's smallest positive normal and its largest finite value, where torchvision's float32
// log and exp of the drawn ratio stay finite; the kernel checks its sides in double before any cast as well.
constexpr double kMinRatio = 1.1754943508222875e-38, kMaxRatio = 3.4028234663852886e38;

bool float_tensor(const ValueType& t) {
  return t.kind == Kind::kTensor &&
         (t.dtype == wire::FLOAT32 || t.dtype == wire::FLOAT16 || t.dtype == wire::BFLOAT16);
}

ErasingParams erasing_params(const wire::Op& op, wire::DType dtype) {
  ErasingParams params;
  params.round = rounding_of(dtype);
  params.p = number(op, "p");
  const auto scale = numbers(op, "scale"), ratio = numbers(op, "ratio");
  params.scale_lo = scale[0];
  params.scale_hi = scale[1];
  params.ratio_lo = ratio[0];
  params.ratio_hi = ratio[1];
  const wire::OpValue* value = param(op, "value");
  if (value->kind_case() == wire::OpValue::kText) {
    params.value = {EraseValue::Kind::kRandom, {}};
  } else {
    const auto v = numbers(op, "value");
    params.value.kind = v.size() == 1 ? EraseValue::Kind::kConstant : EraseValue::Kind::kPerChannel;
    params.value.values.assign(v.begin(), v.end());
  }
  return params;
}

class RandomErasingKernel final : public SampleKernel {
 public:
  RandomErasingKernel(ErasingParams params, bool hwc) : op_(std::move(params)), hwc_(hwc) {}
  Status run(Sample& s, SampleRng& rng) override {
    op_.apply(s.tensor.data(), TensorShape{s.channels, s.height, s.width, hwc_}, rng);
    return ok_status();
  }

 private:
  RandomErasing op_;
  bool hwc_;
};

Result<ValueType> plan_random_erasing(const wire::Op& op, const ValueType& in, const OpPlanContext&) {
  if (!float_tensor(in)) {
    const std::string what = in.kind == Kind::kTensor ? std::string("a ") + wire::dtype_name(in.dtype) + " tensor"
                                                      : std::string("an image");
    return Error(ErrorCode::kInvalidArgument,
                 "random_erasing takes a float tensor, not " + what +
                     " (torchvision's RandomErasing works on tensors): put it after to_tensor (and normalize, as "
                     "the references do), or after convert_image_dtype to a float dtype");
  }
  const auto scale = numbers(op, "scale"), ratio = numbers(op, "ratio");
  if (scale[0] > scale[1]) return param_error("scale", "min is above max (give [min, max])");
  if (ratio[0] <= 0) return param_error("ratio", "must be above 0 (an aspect ratio; its logarithm is drawn from)");
  if (!(ratio[0] >= kMinRatio && ratio[1] <= kMaxRatio)) {
    return param_error("ratio", "must be within [1.2e-38, 3.4e38] (an aspect ratio whose logarithm is drawn from: "
                                "torchvision takes torch.log(torch.tensor(ratio)) in float32, and raises outside "
                                "float32's positive normal range)");
  }
  if (ratio[0] > ratio[1]) return param_error("ratio", "min is above max (give [min, max])");
  const wire::OpValue* value = param(op, "value");
  if (value->kind_case() == wire::OpValue::kNumbers && value->numbers().values_size() != 3) {
    return param_error("value", "has " + std::to_string(value->numbers().values_size()) +
                                    " numbers: give one (every channel) or 3 (R, G, B)");
  }
  return in;
}

}  // namespace

void add_erasing_ops(std::vector<OpDef>* defs) {
  OpDef d;
  d.name = "random_erasing";
  d.follows = "torchvision.transforms.RandomErasing";
  d.random = true;
  d.params = {
      {.key = "p", .type = ParamType::kNumber, .default_value = number_value(0.5), .min = 0, .max = 1,
       .doc = "probability that the image is erased"},
      {.key = "scale", .type = ParamType::kNumbers, .default_value = numbers_value({0.02, 0.33}), .min = 0, .max = 1,
       .min_len = 2, .max_len = 2, .doc = "[min, max] of the erased area, as a fraction of the image's"},
      {.key = "ratio", .type = ParamType::kNumbers, .default_value = numbers_value({0.3, 3.3}), .min_len = 2,
       .max_len = 2, .doc = "[min, max] aspect ratio (height / width) of the erased box, drawn log-uniformly; within float32's "
              "positive normal range [1.2e-38, 3.4e38]"},
      {.key = "value", .type = ParamType::kNumberOrText, .default_value = number_value(0),
       .choices = {"random"}, .min_len = 1, .max_len = 3,
       .doc = "what the box is filled with: a number, [r, g, b], or \"random\" (N(0, 1) per element)"},
  };
  d.plan = plan_random_erasing;
  d.compile = [](const wire::Op& op, const ValueType& in,
                 const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    return std::unique_ptr<SampleKernel>(new RandomErasingKernel(erasing_params(op, in.dtype), in.hwc));
  };
  defs->push_back(std::move(d));
}

}  // namespace batchd::daemon::ops
