// pipeline_spec.cc — batchd::Op (batchd/pipeline_spec.h) and the spec's wire form (wire_mapping.h): PipelineSpec,
// Op and OpValue to and from the messages of proto/batchd_client.proto, value kind for value kind.
#include "batchd/pipeline_spec.h"

#include <algorithm>

#include "core/wire_mapping.h"

namespace batchd {

const OpValue* Op::find(const std::string& key) const {
  const auto it = std::find_if(params_.begin(), params_.end(), [&](const auto& p) { return p.first == key; });
  return it == params_.end() ? nullptr : &it->second;
}

Op& Op::put(const std::string& key, OpValue value) {
  for (auto& [k, v] : params_) {
    if (k == key) {
      v = std::move(value);
      return *this;
    }
  }
  params_.emplace_back(key, std::move(value));
  return *this;
}

namespace detail {

namespace {

void op_to_wire(const Op& op, wire::Op* out);

void value_to_wire(const OpValue& value, wire::OpValue* out) {
  struct Visit {
    wire::OpValue* out;
    void operator()(double number) const { out->set_number(number); }
    void operator()(const std::vector<double>& numbers) const {
      auto* list = out->mutable_numbers();  // set even when empty: an empty list is still a list
      for (double x : numbers) list->add_values(x);
    }
    void operator()(const std::string& text) const { out->set_text(text); }
    void operator()(bool flag) const { out->set_flag(flag); }
    void operator()(const std::vector<Op>& ops) const {
      auto* list = out->mutable_ops();
      for (const auto& op : ops) op_to_wire(op, list->add_ops());
    }
  };
  std::visit(Visit{out}, value);
}

void op_to_wire(const Op& op, wire::Op* out) {
  out->set_name(op.name());
  for (const auto& [key, value] : op.params()) {
    auto* param = out->add_params();
    param->set_key(key);
    value_to_wire(value, param->mutable_value());
  }
}

Op op_from_wire(const wire::Op& op);

OpValue value_from_wire(const wire::OpValue& value) {
  switch (value.kind_case()) {
    case wire::OpValue::kNumber: return value.number();
    case wire::OpValue::kNumbers: return std::vector<double>(value.numbers().values().begin(),
                                                             value.numbers().values().end());
    case wire::OpValue::kText: return value.text();
    case wire::OpValue::kFlag: return value.flag();
    case wire::OpValue::kOps: {
      std::vector<Op> ops;
      for (const auto& op : value.ops().ops()) ops.push_back(op_from_wire(op));
      return ops;
    }
    case wire::OpValue::KIND_NOT_SET: break;
  }
  return std::vector<double>();  // a daemon's canonical spec always sets one; an unset value reads as no numbers
}

Op op_from_wire(const wire::Op& op) {
  Op out(op.name());
  for (const auto& param : op.params()) {
    const OpValue value = value_from_wire(param.value());
    std::visit([&](const auto& v) { out.set(param.key(), v); }, value);
  }
  return out;
}

}  // namespace

wire::PipelineSpec to_wire(const PipelineSpec& spec) {
  wire::PipelineSpec out;
  for (const auto& op : spec.ops) op_to_wire(op, out.add_ops());
  for (const auto& op : spec.batch_ops) op_to_wire(op, out.add_batch_ops());
  return out;
}

PipelineSpec from_wire(const wire::PipelineSpec& spec) {
  PipelineSpec out;
  for (const auto& op : spec.ops()) out.ops.push_back(op_from_wire(op));
  for (const auto& op : spec.batch_ops()) out.batch_ops.push_back(op_from_wire(op));
  return out;
}

}  // namespace detail
}  // namespace batchd
