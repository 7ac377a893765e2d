#include "transforms/ops/op.h"

namespace batchd::daemon::ops {

ParamDef param_def(std::string key, ParamType type, std::string doc) {
  ParamDef p;
  p.key = std::move(key);
  p.type = type;
  p.doc = std::move(doc);
  return p;
}

wire::OpValue number_value(double v) {
  wire::OpValue value;
  value.set_number(v);
  return value;
}

wire::OpValue numbers_value(std::vector<double> v) {
  wire::OpValue value;
  for (double x : v) value.mutable_numbers()->add_values(x);
  return value;
}

wire::OpValue text_value(std::string v) {
  wire::OpValue value;
  value.set_text(std::move(v));
  return value;
}

wire::OpValue flag_value(bool v) {
  wire::OpValue value;
  value.set_flag(v);
  return value;
}

const wire::OpValue* param(const wire::Op& op, std::string_view key) {
  for (const auto& p : op.params()) {
    if (p.key() == key) return &p.value();
  }
  return nullptr;
}

double number(const wire::Op& op, std::string_view key, double fallback) {
  const wire::OpValue* v = param(op, key);
  return v != nullptr && v->kind_case() == wire::OpValue::kNumber ? v->number() : fallback;
}

std::vector<double> numbers(const wire::Op& op, std::string_view key) {
  const wire::OpValue* v = param(op, key);
  if (v == nullptr) return {};
  if (v->kind_case() == wire::OpValue::kNumber) return {v->number()};
  if (v->kind_case() != wire::OpValue::kNumbers) return {};
  return {v->numbers().values().begin(), v->numbers().values().end()};
}

std::string text(const wire::Op& op, std::string_view key) {
  const wire::OpValue* v = param(op, key);
  return v != nullptr && v->kind_case() == wire::OpValue::kText ? v->text() : std::string();
}

bool flag(const wire::Op& op, std::string_view key) {
  const wire::OpValue* v = param(op, key);
  return v != nullptr && v->kind_case() == wire::OpValue::kFlag && v->flag();
}

bool has(const wire::Op& op, std::string_view key) { return param(op, key) != nullptr; }

Result<ValueType> need_image(const ValueType& in) {
  if (in.kind == Kind::kImage && in.channels == 3) return in;
  if (in.kind == Kind::kImage) {
    return Error(ErrorCode::kInvalidArgument, "takes an RGB image, and idx_image gives 1-channel (grayscale) ones: "
                                              "after idx_image come only to_tensor or pil_to_tensor and the tensor "
                                              "ops");
  }
  if (in.kind == Kind::kEncoded) return Error(ErrorCode::kInvalidArgument, "takes an image: decode comes first");
  return Error(ErrorCode::kInvalidArgument, "takes a PIL-style image, not a tensor: batchd runs the image ops before "
                                            "to_tensor / pil_to_tensor; move it before them");
}

void reserve_for(const ValueType& t, Sample* sample) {
  if (!t.fixed_size()) return;
  const size_t values = static_cast<size_t>(t.height) * static_cast<size_t>(t.width) * static_cast<size_t>(t.channels);
  if (t.kind == Kind::kImage) {  // RgbImage holds 3 bytes a pixel (an idx_image's is the idx executor's, not here)
    sample->image.pixels.reserve(values);
    sample->spare.pixels.reserve(values);
  } else if (t.kind == Kind::kTensor) {
    sample->tensor.reserve(values);
    if (t.hwc) sample->tensor_spare.reserve(values);  // the layout op's output: it writes tensor_spare and swaps
  }
}

uint64_t reserved_bytes(const Sample& sample) {
  return sample.image.pixels.capacity() + sample.spare.pixels.capacity() +
         (sample.tensor.capacity() + sample.tensor_spare.capacity()) * sizeof(float);
}

Error param_error(std::string_view key, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, std::string(key) + ": " + what);
}

}  // namespace batchd::daemon::ops
