#include "transforms/ops/op_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace batchd::daemon::ops {

namespace {

std::vector<OpDef> build() {
  std::vector<OpDef> defs;
  add_geometry_ops(&defs);
  add_color_ops(&defs);
  add_augment_ops(&defs);
  add_tensor_ops(&defs);
  add_control_ops(&defs);
  add_erasing_ops(&defs);
  add_batch_ops(&defs);  // after add_control_ops: gives random_choice its batch kernel
  add_source_ops(&defs);
  return defs;
}

const std::vector<OpDef>& registry() {
  static const std::vector<OpDef> defs = build();
  return defs;
}

std::string show(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

const char* kind_name(const wire::OpValue& v) {
  switch (v.kind_case()) {
    case wire::OpValue::kNumber: return "a number";
    case wire::OpValue::kNumbers: return "a list of numbers";
    case wire::OpValue::kText: return "a string";
    case wire::OpValue::kFlag: return "a boolean";
    case wire::OpValue::kOps: return "a list of ops";
    default: return "empty";
  }
}

std::string choices_of(const ParamDef& def) {
  std::string s;
  for (const auto& c : def.choices) s += (s.empty() ? "\"" : ", \"") + c + "\"";
  return s;
}

std::string expected(const ParamDef& def) {
  switch (def.type) {
    case ParamType::kNumber: return "a number";
    case ParamType::kInteger: return "an integer";
    case ParamType::kFlag: return "true or false";
    case ParamType::kText: return "one of " + choices_of(def);
    case ParamType::kNumbers:
      return def.min_len == def.max_len ? "a list of " + std::to_string(def.min_len) + " numbers"
                                        : "a list of " + std::to_string(def.min_len) + " to " +
                                              std::to_string(def.max_len) + " numbers";
    case ParamType::kNumberOrList:
      return "a number or a list of " + (def.min_len == def.max_len ? std::to_string(def.max_len)
                                                                    : std::to_string(def.min_len) + " to " +
                                                                          std::to_string(def.max_len)) + " numbers";
    case ParamType::kNumberOrText: return "a number, a list of numbers or one of " + choices_of(def);
    case ParamType::kOps: return "a list of ops";
  }
  return "?";
}

Status check_number(const ParamDef& def, double v, const OpLimits& limits) {
  if (!std::isfinite(v)) return param_error(def.key, "must be a finite number, not " + show(v));
  if (def.type == ParamType::kInteger && v != std::floor(v)) {
    return param_error(def.key, "must be an integer, not " + show(v));
  }
  if (v < def.min || v > def.max) {
    return param_error(def.key, show(v) + " is out of range [" + show(def.min) + ", " + show(def.max) + "]");
  }
  if (def.limit != nullptr && v > limits.*def.limit) {
    return param_error(def.key, show(v) + " is over " + def.limit_key + " (" + show(limits.*def.limit) +
                                    "): ask the daemon's operator to raise it, or use a smaller value");
  }
  return ok_status();
}

Status check_value(const ParamDef& def, const wire::OpValue& v, const OpLimits& limits) {
  const auto kind = v.kind_case();
  const bool list_ok = def.type == ParamType::kNumbers || def.type == ParamType::kNumberOrList ||
                       def.type == ParamType::kNumberOrText;
  const bool number_ok = def.type == ParamType::kNumber || def.type == ParamType::kInteger ||
                         def.type == ParamType::kNumberOrList || def.type == ParamType::kNumberOrText;
  const bool text_ok = def.type == ParamType::kText || def.type == ParamType::kNumberOrText;
  if (kind == wire::OpValue::kNumber && number_ok) return check_number(def, v.number(), limits);
  if (kind == wire::OpValue::kNumbers && list_ok) {
    const size_t n = static_cast<size_t>(v.numbers().values_size());
    if (n < def.min_len || n > def.max_len) {
      return param_error(def.key, "has " + std::to_string(n) + " numbers; expected " + expected(def));
    }
    for (double x : v.numbers().values()) BATCHD_RETURN_IF_ERROR(check_number(def, x, limits));
    return ok_status();
  }
  if (kind == wire::OpValue::kText && text_ok) {
    if (std::find(def.choices.begin(), def.choices.end(), v.text()) != def.choices.end()) return ok_status();
    return param_error(def.key, "\"" + v.text().substr(0, 64) + "\" is not " + expected(def));
  }
  if (kind == wire::OpValue::kFlag && def.type == ParamType::kFlag) return ok_status();
  if (kind == wire::OpValue::kOps && def.type == ParamType::kOps) return ok_status();
  return param_error(def.key, std::string("is ") + kind_name(v) + "; expected " + expected(def));
}

}  // namespace

const OpDef* find_op(std::string_view name) {
  for (const OpDef& d : registry()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::span<const OpDef> all_ops() { return registry(); }

std::string known_op_names(bool batch_ops) {
  std::string s;
  for (const OpDef& d : registry()) {
    if (d.batch_op == batch_ops || d.name == "random_choice") s += (s.empty() ? "" : ", ") + d.name;
  }
  return s;
}

Result<wire::Op> check_params(const OpDef& def, const wire::Op& op, const OpLimits& limits) {
  for (int i = 0; i < op.params_size(); ++i) {
    const std::string& key = op.params(i).key();
    const bool known = std::any_of(def.params.begin(), def.params.end(), [&](const ParamDef& p) { return p.key == key; });
    if (!known) {
      std::string names;
      for (const auto& p : def.params) names += (names.empty() ? "" : ", ") + p.key;
      return Error(ErrorCode::kInvalidArgument, "unknown parameter '" + key.substr(0, 64) + "' (" + def.name +
                                                    (names.empty() ? " takes none)" : " takes " + names + ")"));
    }
    for (int j = 0; j < i; ++j) {
      if (op.params(j).key() == key) return param_error(key, "is given twice");
    }
  }
  wire::Op canonical;
  canonical.set_name(def.name);
  std::vector<const ParamDef*> sorted;
  for (const auto& p : def.params) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const ParamDef* a, const ParamDef* b) { return a->key < b->key; });
  for (const ParamDef* p : sorted) {
    const wire::OpValue* given = param(op, p->key);
    if (given == nullptr) {
      if (p->presence == Presence::kRequired) {
        return param_error(p->key, "is required (" + expected(*p) + (p->doc.empty() ? "" : ": " + p->doc) + ")");
      }
      if (p->presence == Presence::kOptional) continue;
      given = &p->default_value;
    } else {
      BATCHD_RETURN_IF_ERROR(check_value(*p, *given, limits));
    }
    auto* out = canonical.add_params();
    out->set_key(p->key);
    *out->mutable_value() = *given;
    // A list of one where a number will do is that number: [224] and 224 are one size (as torchvision reads them).
    if ((p->type == ParamType::kNumberOrList || p->type == ParamType::kNumberOrText) &&
        given->kind_case() == wire::OpValue::kNumbers && given->numbers().values_size() == 1) {
      out->mutable_value()->set_number(given->numbers().values(0));
    }
  }
  if (def.canonicalize) def.canonicalize(canonical);
  return canonical;
}

}  // namespace batchd::daemon::ops
