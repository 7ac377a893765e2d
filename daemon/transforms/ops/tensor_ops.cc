// The tensor family: to_tensor, pil_to_tensor, convert_image_dtype, normalize, layout (torchvision 0.14's
// ToTensor, PILToTensor, ConvertImageDtype, Normalize; layout is batchd's: the output's memory order).
#include "transforms/ops/tensor_ops.h"

#include <algorithm>
#include <cmath>

#include "transforms/kernels/dtype_cast.h"
#include "transforms/ops/op_registry.h"

namespace batchd::daemon::ops {

namespace {

bool is_float(wire::DType d) { return d == wire::FLOAT32 || d == wire::FLOAT16 || d == wire::BFLOAT16; }

const char* dtype_name(wire::DType d) {
  switch (d) {
    case wire::UINT8: return "uint8";
    case wire::FLOAT32: return "float32";
    case wire::FLOAT16: return "float16";
    case wire::BFLOAT16: return "bfloat16";
    default: return "?";
  }
}

wire::DType dtype_of(const std::string& name) {
  if (name == "uint8") return wire::UINT8;
  if (name == "float16") return wire::FLOAT16;
  if (name == "bfloat16") return wire::BFLOAT16;
  return wire::FLOAT32;
}

// A float32 value as a tensor of dtype `d` holds it (rounding_of).
float round_to(wire::DType d, float x) {
  const Rounding round = rounding_of(d);
  return round != nullptr ? round(x) : x;
}

Result<ValueType> need_tensor(const ValueType& in, const char* what) {
  if (in.kind == Kind::kTensor && !in.hwc) return in;
  if (in.kind == Kind::kTensor) return Error(ErrorCode::kInvalidArgument, "comes before layout (layout is last)");
  return Error(ErrorCode::kInvalidArgument, std::string("takes a tensor: ") + what);
}

// Runs pointwise(op) over Sample.tensor.
class PointwiseKernel final : public SampleKernel {
 public:
  explicit PointwiseKernel(PointwiseStep step) : step_(step) {}
  Status run(Sample& s, SampleRng&) override {
    const size_t plane = static_cast<size_t>(s.height) * s.width;
    for (int c = 0; c < s.channels; ++c) {
      float* v = s.tensor.data() + c * plane;
      for (size_t i = 0; i < plane; ++i) v[i] = step_(c, v[i]);
    }
    return ok_status();
  }

 private:
  PointwiseStep step_;
};

// Image (HWC uint8) -> tensor (CHW float32 values), through pointwise(op).
class ToTensorKernel final : public SampleKernel {
 public:
  explicit ToTensorKernel(const PointwiseStep& step) {
    for (int c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) lut_[c][v] = step(c, static_cast<float>(v));
    }
  }
  Status run(Sample& s, SampleRng&) override {
    s.channels = 3;
    s.height = s.image.height;
    s.width = s.image.width;
    const size_t plane = static_cast<size_t>(s.height) * s.width;
    s.tensor.resize(3 * plane);
    for (size_t i = 0; i < plane; ++i) {
      for (int c = 0; c < 3; ++c) s.tensor[c * plane + i] = lut_[c][s.image.pixels[3 * i + c]];
    }
    return ok_status();
  }

 private:
  float lut_[3][256];
};

class LayoutKernel final : public SampleKernel {
 public:
  Status run(Sample& s, SampleRng&) override {  // CHW -> HWC
    const size_t plane = static_cast<size_t>(s.height) * s.width;
    s.tensor_spare.resize(s.tensor.size());
    for (int c = 0; c < s.channels; ++c) {
      for (size_t i = 0; i < plane; ++i) s.tensor_spare[i * s.channels + c] = s.tensor[c * plane + i];
    }
    std::swap(s.tensor, s.tensor_spare);
    return ok_status();
  }
};

OpDef conversion_def(const char* name, const char* follows, wire::DType out) {
  OpDef d;
  d.name = name;
  d.follows = follows;
  d.plan = [out](const wire::Op&, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    if (in.kind != Kind::kImage) {
      return Error(ErrorCode::kInvalidArgument, in.kind == Kind::kTensor ? "the image is a tensor already"
                                                                         : "takes an image: decode comes first");
    }
    return ValueType{.kind = Kind::kTensor, .height = in.height, .width = in.width, .dtype = out,
                     .channels = in.channels};
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    return std::unique_ptr<SampleKernel>(new ToTensorKernel(pointwise_step(op, wire::UINT8)));
  };
  return d;
}

OpDef convert_image_dtype_def() {
  OpDef d;
  d.name = "convert_image_dtype";
  d.follows = "torchvision.transforms.ConvertImageDtype";
  d.params = {{.key = "dtype", .type = ParamType::kText, .default_value = text_value("float32"),
               .choices = {"uint8", "float32", "float16", "bfloat16"},
               .doc = "the element type, scaled as torchvision scales it (uint8 <-> float: / 255, * 255.999)"}};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    auto out = need_tensor(in, "to_tensor or pil_to_tensor comes first");
    if (!out.ok()) return out;
    out->dtype = dtype_of(text(op, "dtype"));
    return out;
  };
  d.compile = [](const wire::Op& op, const ValueType& in, const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    return std::unique_ptr<SampleKernel>(new PointwiseKernel(pointwise_step(op, in.dtype)));
  };
  return d;
}

OpDef normalize_def() {
  OpDef d;
  d.name = "normalize";
  d.follows = "torchvision.transforms.Normalize";
  d.params = {{.key = "mean", .type = ParamType::kNumbers, .presence = Presence::kRequired, .min_len = 1,
               .max_len = 3, .doc = "one per channel (R, G, B; one after idx_image), in the tensor's units (0..1 "
                                    "after to_tensor)"},
              {.key = "std", .type = ParamType::kNumbers, .presence = Presence::kRequired, .min_len = 1,
               .max_len = 3, .doc = "one per channel, not 0"}};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    auto out = need_tensor(in, "to_tensor comes first");
    if (!out.ok()) return out;
    if (!is_float(in.dtype)) {
      return Error(ErrorCode::kInvalidArgument, std::string("takes a float tensor, not ") + dtype_name(in.dtype) +
                                                    " (torchvision refuses it too): use to_tensor, or "
                                                    "convert_image_dtype(dtype = \"float32\") first");
    }
    for (const char* key : {"mean", "std"}) {  // torchvision broadcasts mean[c] over channel c: one per channel
      const size_t n = numbers(op, key).size();
      if (n == static_cast<size_t>(in.channels)) continue;
      return param_error(key, "has " + std::to_string(n) + " numbers; expected " +
                                  (in.channels == 3 ? std::string("a list of 3 numbers")
                                                    : "1 number (idx_image's grayscale image has one channel)"));
    }
    for (double s : numbers(op, "std")) {
      if (s == 0) return param_error("std", "has a 0: it divides (torchvision refuses it too)");
    }
    return out;
  };
  d.compile = [](const wire::Op& op, const ValueType& in, const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    return std::unique_ptr<SampleKernel>(new PointwiseKernel(pointwise_step(op, in.dtype)));
  };
  return d;
}

OpDef layout_def() {
  OpDef d;
  d.name = "layout";
  d.follows = "not torchvision: the image tensor's memory order in the slot (torchvision's is CHW)";
  d.params = {{.key = "order", .type = ParamType::kText, .default_value = text_value("CHW"),
               .choices = {"CHW", "HWC"}, .doc = "CHW: [C, H, W] per sample (torchvision's); HWC: [H, W, C]"}};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    auto out = need_tensor(in, "to_tensor or pil_to_tensor comes first");
    if (!out.ok()) return out;
    out->hwc = text(op, "order") == "HWC";
    return out;
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    if (text(op, "order") == "CHW") return std::unique_ptr<SampleKernel>();  // nothing to do
    return std::unique_ptr<SampleKernel>(new LayoutKernel());
  };
  return d;
}

}  // namespace

Rounding rounding_of(wire::DType d) {
  if (d == wire::FLOAT16) return round_to_half;
  if (d == wire::BFLOAT16) return round_to_bfloat16;
  return nullptr;
}

bool is_pointwise(const wire::Op& op) {
  return op.name() == "to_tensor" || op.name() == "pil_to_tensor" || op.name() == "convert_image_dtype" ||
         op.name() == "normalize";
}

PointwiseStep pointwise_step(const wire::Op& op, wire::DType in) {
  PointwiseStep step;
  step.in = in;
  step.out = in;
  const std::string& name = op.name();
  if (name == "to_tensor") {
    step.fn = PointwiseStep::Fn::kDiv255;
    step.out = wire::FLOAT32;
  } else if (name == "pil_to_tensor") {
    step.out = wire::UINT8;
  } else if (name == "convert_image_dtype") {
    step.out = dtype_of(text(op, "dtype"));
    if (in == wire::UINT8 && is_float(step.out)) step.fn = PointwiseStep::Fn::kDiv255;
    if (is_float(in) && step.out == wire::UINT8) step.fn = PointwiseStep::Fn::kToUint8;
  } else if (name == "normalize") {
    step.fn = PointwiseStep::Fn::kNormalize;
    const auto mean = numbers(op, "mean"), sd = numbers(op, "std");
    const size_t channels = std::min<size_t>({3, mean.size(), sd.size()});  // one per channel (3, or 1: idx_image)
    for (size_t c = 0; c < channels; ++c) {  // torch.as_tensor(mean, dtype=tensor.dtype)
      step.mean[c] = round_to(in, static_cast<float>(mean[c]));
      step.std[c] = round_to(in, static_cast<float>(sd[c]));
    }
  }
  return step;
}

float PointwiseStep::operator()(int c, float x) const {
  // torch computes a float16 / bfloat16 op in float32 and rounds its result to the tensor's dtype: every step
  // rounds, normalize's subtraction too (its sub_ and div_ are two ops).
  switch (fn) {
    case Fn::kIdentity: return round_to(out, x);
    case Fn::kDiv255: return round_to(out, x / 255.0f);
    // float16 / bfloat16 -> uint8: the product rounded to the dtype. torch 1.13 rounds the scalar 255.999 to the
    // dtype first (256 in both), which gives the same bytes: x * 255.999f rounded to the dtype is x * 256 for every
    // finite value of either dtype (checked over all 65,536 bit patterns of each).
    case Fn::kToUint8: return static_cast<float>(float_to_uint8_cast(round_to(in, x * kFloatToUint8Scale)));
    case Fn::kNormalize: return round_to(out, round_to(out, x - mean[c]) / std[c]);
  }
  return x;
}

void add_tensor_ops(std::vector<OpDef>* defs) {
  defs->push_back(conversion_def("to_tensor", "torchvision.transforms.ToTensor", wire::FLOAT32));
  defs->push_back(conversion_def("pil_to_tensor", "torchvision.transforms.PILToTensor", wire::UINT8));
  defs->push_back(convert_image_dtype_def());
  defs->push_back(normalize_def());
  defs->push_back(layout_def());
}

}  // namespace batchd::daemon::ops
