// spec_binding.cc — batchd::PipelineSpec (batchd/pipeline_spec.h) from and to Python's op-dict form:
// {"ops": [{"op": NAME, KEY: VALUE, ...}, ...], "batch_ops": [...]} (batchd/_transforms/spec.py checks and
// normalizes it first).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "binding.h"

namespace batchd_py {

namespace {

std::vector<batchd::Op> ops_from(const py::handle& list, const std::string& where);

batchd::OpValue value_from(const py::handle& v, const std::string& where) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    const auto seq = py::reinterpret_borrow<py::sequence>(v);
    if (seq.size() > 0 && py::isinstance<py::dict>(seq[0])) return ops_from(seq, where);
    std::vector<double> numbers;
    for (const auto& x : seq) {
      if (py::isinstance<py::bool_>(x) || !(py::isinstance<py::int_>(x) || py::isinstance<py::float_>(x))) {
        throw py::type_error(where + ": a list holds numbers only, or op dicts only");
      }
      numbers.push_back(x.cast<double>());
    }
    return numbers;
  }
  throw py::type_error(where + ": a parameter is a number, a list of numbers, a str, a bool or a list of op dicts");
}

batchd::Op op_from(const py::handle& d, const std::string& where) {
  if (!py::isinstance<py::dict>(d)) throw py::type_error(where + " is not an op dict");
  const auto dict = py::reinterpret_borrow<py::dict>(d);
  if (!dict.contains("op") || !py::isinstance<py::str>(dict["op"])) {
    throw py::type_error(where + " has no \"op\" name");
  }
  batchd::Op op(dict["op"].cast<std::string>());
  for (auto item : dict) {
    const std::string key = py::str(item.first);
    if (key == "op" || item.second.is_none()) continue;
    std::visit([&](auto&& value) { op.set(key, std::move(value)); },
               value_from(item.second, where + " key '" + key + "'"));
  }
  return op;
}

std::vector<batchd::Op> ops_from(const py::handle& list, const std::string& where) {
  std::vector<batchd::Op> ops;
  size_t i = 0;
  for (const auto& d : py::reinterpret_borrow<py::iterable>(list)) {
    ops.push_back(op_from(d, where + "[" + std::to_string(i++) + "]"));
  }
  return ops;
}

py::list ops_list(const std::vector<batchd::Op>& ops);

py::object value_object(const batchd::OpValue& value) {
  struct Visit {
    py::object operator()(double number) const { return py::float_(number); }
    py::object operator()(const std::vector<double>& numbers) const { return py::cast(numbers); }
    py::object operator()(const std::string& text) const { return py::str(text); }
    py::object operator()(bool flag) const { return py::bool_(flag); }
    py::object operator()(const std::vector<batchd::Op>& ops) const { return ops_list(ops); }
  };
  return std::visit(Visit{}, value);
}

py::list ops_list(const std::vector<batchd::Op>& ops) {
  py::list out;
  for (const auto& op : ops) {
    py::dict d;
    d["op"] = op.name();
    for (const auto& [key, value] : op.params()) d[py::str(key)] = value_object(value);
    out.append(d);
  }
  return out;
}

}  // namespace

batchd::PipelineSpec spec_from(const py::handle& spec) {
  if (!py::isinstance<py::dict>(spec)) throw py::type_error("spec must be a dict {\"ops\": [...], \"batch_ops\": [...]}");
  const auto d = py::reinterpret_borrow<py::dict>(spec);
  batchd::PipelineSpec out;
  for (auto item : d) {
    const std::string key = py::str(item.first);
    if (key == "ops") out.ops = ops_from(item.second, "ops");
    else if (key == "batch_ops") out.batch_ops = ops_from(item.second, "batch_ops");
    else throw py::type_error("unknown spec key '" + key + "' (known: ops, batch_ops)");
  }
  return out;
}

py::dict spec_dict(const batchd::PipelineSpec& spec) {
  py::dict d;
  d["ops"] = ops_list(spec.ops);
  d["batch_ops"] = ops_list(spec.batch_ops);
  return d;
}

}  // namespace batchd_py
