// A whole spec through the real executor (transforms/spec/spec_pipeline.h): op dicts as Python writes them (the
// vocabulary of docs/operations.md "Pipelines"), encoded images in memory as the samples.
#include <cstring>
#include <stdexcept>

#include <pybind11/stl.h>

#include "ops_testing.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/spec/compile_spec.h"
#include "batchd/wire/convert.h"

namespace batchd::testing {

namespace {

// Encoded images held in memory: a real Dataset + ImageSamples, for the executor's reads.
class BytesDataset final : public daemon::Dataset, public daemon::ImageSamples {
 public:
  BytesDataset(std::vector<std::string> images, std::vector<int64_t> labels)
      : images_(std::move(images)), labels_(std::move(labels)) {}
  const std::string& name() const override { return name_; }
  const char* format() const override { return "memory"; }
  uint64_t size() const override { return images_.size(); }
  const ImageSamples* images() const override { return this; }
  Status read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const override {
    bytes->assign(images_[i].begin(), images_[i].end());
    *label = labels_[i];
    return ok_status();
  }
  void sample_name(uint64_t i, std::string* out) const override { *out = "image " + std::to_string(i); }
  using ImageSamples::sample_name;
  daemon::FileStamp stamp(uint64_t) const override { return {}; }  // bytes, no file: never cached

 private:
  std::string name_ = "memory";
  std::vector<std::string> images_;
  std::vector<int64_t> labels_;
};

void to_value(const py::handle& v, wire::OpValue* out);

void to_ops(const py::handle& list, google::protobuf::RepeatedPtrField<wire::Op>* out) {
  for (const auto& item : list) {
    const auto d = py::reinterpret_borrow<py::dict>(item);
    wire::Op* op = out->Add();
    for (const auto& [k, v] : d) {
      const std::string key = py::str(k);
      if (key == "op") {
        op->set_name(py::str(v));
        continue;
      }
      auto* p = op->add_params();
      p->set_key(key);
      to_value(v, p->mutable_value());
    }
  }
}

void to_value(const py::handle& v, wire::OpValue* out) {
  if (py::isinstance<py::bool_>(v)) {
    out->set_flag(v.cast<bool>());
  } else if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) {
    out->set_number(v.cast<double>());
  } else if (py::isinstance<py::str>(v)) {
    out->set_text(v.cast<std::string>());
  } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    const auto seq = py::reinterpret_borrow<py::sequence>(v);
    if (py::len(seq) > 0 && py::isinstance<py::dict>(seq[0])) {
      to_ops(seq, out->mutable_ops()->mutable_ops());
    } else {
      for (const auto& x : seq) out->mutable_numbers()->add_values(x.cast<double>());
    }
  } else {
    throw std::invalid_argument("an op parameter must be a bool, number, str, list of numbers or list of op dicts");
  }
}

wire::PipelineSpec to_spec(const py::list& ops, const py::list& batch_ops) {
  wire::PipelineSpec spec;
  to_ops(ops, spec.mutable_ops());
  to_ops(batch_ops, spec.mutable_batch_ops());
  return spec;
}

py::array tensor_array(const daemon::TensorDesc& t, uint32_t samples, const char* data) {
  std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(samples)};
  for (int64_t d : t.sample_shape) shape.push_back(d);
  // float16 as numpy's float16; bfloat16 (numpy has none) as its bits, uint16.
  py::dtype dtype = t.dtype == wire::UINT8      ? py::dtype::of<uint8_t>()
                    : t.dtype == wire::INT64    ? py::dtype::of<int64_t>()
                    : t.dtype == wire::FLOAT16  ? py::dtype("float16")
                    : t.dtype == wire::BFLOAT16 ? py::dtype::of<uint16_t>()
                                                : py::dtype::of<float>();
  py::array out(dtype, shape);
  std::memcpy(out.mutable_data(), data, t.sample_bytes() * samples);
  return out;
}

}  // namespace

void bind_spec(py::module_& m) {
  m.def(
      "plan",
      [](const py::list& ops, const py::list& batch_ops, int64_t num_classes) {
        const daemon::ops::OpLimits limits;
        auto planned = daemon::ops::plan_spec(to_spec(ops, batch_ops), {&limits, num_classes});
        if (!planned.ok()) throw std::invalid_argument(planned.error().message());
        return py::bytes(planned->canonical.SerializeAsString());
      },
      py::arg("ops"), py::arg("batch_ops") = py::list(), py::arg("num_classes") = 0,
      "The canonical spec (serialized PipelineSpec) as the daemon's plan writes it; ValueError with the plan's "
      "message when it refuses the spec (default limits)");
  m.def(
      "run",
      [](const py::list& ops, const std::vector<py::bytes>& images, std::vector<int64_t> labels, uint64_t seed,
         uint64_t epoch, const py::list& batch_ops, uint64_t batch) {
        std::vector<std::string> encoded;
        for (const auto& b : images) encoded.push_back(b);
        if (labels.empty()) labels.assign(encoded.size(), 0);
        auto dataset = std::make_shared<BytesDataset>(std::move(encoded), labels);
        const daemon::ops::OpLimits limits;
        const wire::PipelineSpec spec = to_spec(ops, batch_ops);
        auto planned = daemon::ops::plan_spec(spec, {&limits, 0});
        if (!planned.ok()) throw std::invalid_argument(planned.error().message());
        auto pipeline = daemon::make_pipeline("spec", dataset, {}, planned->canonical);
        if (!pipeline.ok()) throw std::invalid_argument(pipeline.error().message());
        const auto& tensors = (*pipeline)->tensors();
        const auto n = static_cast<uint32_t>(dataset->size());
        std::vector<uint64_t> offsets;
        uint64_t total = 0;
        for (const auto& t : tensors) {
          offsets.push_back(total);
          total += (t.sample_bytes() * n + 63) / 64 * 64;
        }
        std::vector<char> slot(total);
        std::vector<int64_t> indices(n);
        for (uint32_t i = 0; i < n; ++i) indices[i] = i;
        const daemon::BatchContext context{seed, epoch, {}, batch};
        Status st = (*pipeline)->run(indices, slot.data(), offsets, context);
        if (st.ok()) st = (*pipeline)->finish_batch(slot.data(), offsets, n, context);
        if (!st.ok()) throw std::runtime_error(st.error().message());
        return py::make_tuple(tensor_array(tensors[0], n, slot.data() + offsets[0]),
                              tensor_array(tensors[1], n, slot.data() + offsets[1]));
      },
      py::arg("ops"), py::arg("images"), py::arg("labels") = std::vector<int64_t>(), py::arg("seed") = 0,
      py::arg("epoch") = 0, py::arg("batch_ops") = py::list(), py::arg("batch") = 0,
      "Runs the spec over encoded images (bytes: JPEG or PNG) as one batch through the real executor; sample i "
      "is seeded by (seed, epoch, i). Returns (images [B, ...], labels [B] or [B, K])");
}

}  // namespace batchd::testing
