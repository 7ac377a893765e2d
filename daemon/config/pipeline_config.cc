#include "config/pipeline_config.h"

#include <algorithm>
#include <cctype>

#include "config/config.h"
#include "config/toml_read.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/presets/presets.h"

namespace batchd::daemon {

namespace {

Status toml_value(const toml::node& node, const std::string& key, const std::string& source, wire::OpValue* out) {
  if (node.is_integer()) {
    out->set_number(static_cast<double>(*node.value<int64_t>()));
  } else if (node.is_floating_point()) {
    out->set_number(*node.value<double>());
  } else if (node.is_string()) {
    out->set_text(*node.value<std::string>());
  } else if (node.is_boolean()) {
    out->set_flag(*node.value<bool>());
  } else if (const auto* array = node.as_array()) {
    if (!array->empty() && array->front().is_table()) return toml_ops(node, key, source, out->mutable_ops()->mutable_ops());
    auto* list = out->mutable_numbers();
    for (const auto& item : *array) {
      if (!item.is_number()) return bad(source, item, key, "must be a list of numbers or a list of op tables");
      list->add_values(*item.value<double>());
    }
  } else {
    return bad(source, node, key, "must be a number, a string, a boolean, a list of numbers or a list of ops");
  }
  return ok_status();
}

}  // namespace

Status toml_ops(const toml::node& node, const std::string& where, const std::string& source,
                google::protobuf::RepeatedPtrField<wire::Op>* out) {
  const auto* array = node.as_array();
  if (array == nullptr) return bad(source, node, where, "must be a list of op tables ([{ op = \"resize\", ... }])");
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string pos = where + "[" + std::to_string(i) + "]";
    const auto* table = (*array)[i].as_table();
    if (table == nullptr) return bad(source, (*array)[i], pos, "must be a table { op = \"name\", ... }");
    const toml::node* name = table->get("op");
    if (name == nullptr || !name->is_string()) {
      return bad(source, (*array)[i], pos + ".op", "must name the op as a string (e.g. op = \"resize\")");
    }
    wire::Op* op = out->Add();
    op->set_name(*name->value<std::string>());
    for (const auto& [k, v] : *table) {
      const std::string key(k.str());
      if (key == "op") continue;
      auto* param = op->add_params();
      param->set_key(key);
      BATCHD_RETURN_IF_ERROR(toml_value(v, pos + "." + key, source, param->mutable_value()));
    }
  }
  return ok_status();
}

Status parse_pipelines(const toml::table& pipelines, const std::string& source, Config* config) {
  const ops::OpLimits limits = op_limits(config->limits);
  for (const auto& [k, v] : pipelines) {
    const std::string name(k.str());
    const std::string prefix = "pipelines." + name;
    const bool name_ok = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
      return std::isalnum(c) || c == '.' || c == '_' || c == '-';
    });
    if (!name_ok) return bad(source, v, prefix, "a pipeline's name is 1 to 64 characters of A-Z a-z 0-9 . _ -");
    if (is_preset(name)) {
      return bad(source, v, prefix, "'" + name + "' is a built-in pipeline's name; name yours differently");
    }
    const auto* table = v.as_table();
    if (table == nullptr) return bad(source, v, prefix, "must be a table with an `ops` list");
    BATCHD_RETURN_IF_ERROR(reject_unknown(*table, {"batch_ops", "ops"}, prefix + ".", source));
    const toml::node* ops_node = table->get("ops");
    if (ops_node == nullptr) return bad(source, v, prefix + ".ops", "is required: the pipeline's list of ops");
    wire::PipelineSpec spec;
    BATCHD_RETURN_IF_ERROR(toml_ops(*ops_node, prefix + ".ops", source, spec.mutable_ops()));
    if (const toml::node* batch = table->get("batch_ops")) {
      BATCHD_RETURN_IF_ERROR(toml_ops(*batch, prefix + ".batch_ops", source, spec.mutable_batch_ops()));
    }
    // num_classes = 1 stands for "the dataset's": the class count is checked when a stream opens it.
    auto planned = ops::plan_spec(spec, ops::OpPlanContext{&limits, 1});
    if (!planned.ok()) return bad(source, v, prefix, planned.error().message());
    config->pipelines[name] = std::move(spec);
  }
  return ok_status();
}

}  // namespace batchd::daemon
