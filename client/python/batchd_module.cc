// _batchd: the Python binding of the batchd client library (pybind11). The public Python API is batchd.Loader in
// batchd/__init__.py; this module exposes the C++ Client, Stream and Batch underneath it.
//
// Zero copy: Batch.arrays() returns numpy arrays that view the batch in the stream's shared-memory segment; their
// base object holds the batch's lease, so the slot goes back to the daemon when the last array (and every torch
// tensor made from one with torch.from_numpy) is freed — never earlier.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <memory>

#include "binding.h"

namespace batchd_py {

namespace {
py::object error_class;  // batchd.BatchdError
}  // namespace

void raise(const batchd::Error& e) {
  py::object err = error_class(e.message());
  err.attr("code") = batchd::to_string(e.code());
  PyErr_SetObject(error_class.ptr(), err.ptr());
  throw py::error_already_set();
}

}  // namespace batchd_py

using batchd_py::raise;
using batchd_py::unwrap;

std::optional<std::chrono::milliseconds> batchd_py::timeout_of(const py::object& seconds) {
  const double s = seconds.is_none() ? 0.0 : seconds.cast<double>();
  if (s <= 0) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(s * 1000)));
}

batchd::StreamOptions batchd_py::options_from(const py::dict& kw) {
  batchd::StreamOptions o;
  for (auto item : kw) {
    const std::string k = py::str(item.first);
    const py::handle v = item.second;
    if (k == "dataset") o.dataset = v.cast<std::string>();
    else if (k == "pipeline") o.pipeline = v.cast<std::string>();
    else if (k == "batch_size") o.batch_size = v.cast<uint32_t>();
    else if (k == "shuffle") o.shuffle = v.cast<bool>();
    else if (k == "seed") o.seed = v.cast<uint64_t>();
    else if (k == "epoch") o.epoch = v.cast<uint64_t>();
    else if (k == "num_epochs") o.num_epochs = v.cast<uint32_t>();
    else if (k == "endless") o.endless = v.cast<bool>();
    else if (k == "seq_len") o.lm.seq_len = v.is_none() ? 0 : v.cast<uint32_t>();
    else if (k == "rank") o.rank = v.cast<uint32_t>();
    else if (k == "world_size") o.world_size = v.cast<uint32_t>();
    else if (k == "drop_last") o.drop_last = v.cast<bool>();
    else if (k == "drop_last_batch") o.drop_last_batch = v.cast<bool>();
    else if (k == "repeated_aug") o.repeated_aug = v.cast<uint32_t>();
    else if (k == "selected_samples") o.selected_samples = v.cast<uint64_t>();
    else if (k == "depth") o.depth = v.cast<uint32_t>();
    else if (k == "start_batch") o.start_batch = v.cast<uint64_t>();
    else if (k == "crop_size") o.vision.crop_size = v.cast<uint32_t>();
    else if (k == "resize_size") o.vision.resize_size = v.cast<uint32_t>();
    else if (k == "exact_decode") o.vision.exact_decode = v.cast<bool>();
    else if (k == "writable") o.writable = v.cast<bool>();
    else if (k == "spec") o.spec = batchd_py::spec_from(v);
    else if (k == "share") o.share = v.is_none() ? std::string() : v.cast<std::string>();
    else if (k == "external") o.external = batchd_py::external_from(v);
    else if (k == "folder") o.folder = v.is_none() ? batchd::FolderRef() : batchd_py::folder_from(v);
    else if (k == "indices") {
      if (!v.is_none()) o.indices = batchd_py::indices_from(v);
    }
    else if (k == "on_error") {
      const auto s = v.cast<std::string>();
      if (s != "fail" && s != "skip") throw py::value_error("on_error must be 'fail' or 'skip', not '" + s + "'");
      o.on_error = s == "skip" ? batchd::OnError::kSkip : batchd::OnError::kFail;
    } else if (k == "sampling") {
      const auto s = v.is_none() ? std::string("tiled") : v.cast<std::string>();
      if (s != "tiled" && s != "random") {
        throw py::value_error("sampling must be 'tiled' (the file cut into windows, each read once per epoch) or "
                              "'random' (nanoGPT's random windows), not '" + s + "'");
      }
      o.lm.sampling = s == "random" ? batchd::LmSampling::kRandomWindows : batchd::LmSampling::kTiledWindows;
    } else if (k == "strategy") {
      const auto s = v.cast<std::string>();
      if (s == "file_descriptor") o.strategy = batchd::SharingStrategy::kFileDescriptor;
      else if (s == "file_system") o.strategy = batchd::SharingStrategy::kFileSystem;
      else throw py::value_error("strategy must be 'file_descriptor' or 'file_system', not '" + s + "'");
    } else {
      throw py::type_error("unknown stream option '" + k + "'");
    }
  }
  return o;
}

py::dict batchd_py::info_dict(const batchd::StreamInfo& i) {
  py::dict d;
  d["id"] = i.id;
  d["strategy"] = i.strategy == batchd::SharingStrategy::kFileSystem ? "file_system" : "file_descriptor";
  d["segment_name"] = i.segment_name;
  d["segment_bytes"] = i.segment_bytes;
  d["depth"] = i.depth;
  d["dataset"] = i.dataset;
  d["dataset_size"] = i.dataset_size;
  d["subset_size"] = i.subset_size;
  d["samples_per_epoch"] = i.samples_per_epoch;
  d["batches_per_epoch"] = i.batches_per_epoch;
  d["total_batches"] = i.total_batches;
  d["endless"] = i.endless;
  d["first_epoch"] = i.first_epoch;
  d["share"] = i.share;
  d["joined_at_batch"] = i.joined_at_batch;
  d["spec"] = batchd_py::spec_dict(i.spec);
  d["num_classes"] = i.num_classes;
  d["classes"] = i.classes;
  return d;
}

namespace {

// A batch shared between the Python Batch object and every array viewing it.
using SharedBatch = std::shared_ptr<batchd::Batch>;

py::dict arrays_of(const SharedBatch& batch) {
  if (!batch->valid()) throw py::value_error("this batch was released");
  // One capsule owns a reference to the batch; every array of this call uses it as its base.
  auto* holder = new SharedBatch(batch);
  py::capsule base(holder, [](void* p) { delete static_cast<SharedBatch*>(p); });
  py::dict out;
  for (const auto& t : batch->tensors()) out[py::str(t.name)] = batchd_py::array_over(t, base);
  return out;
}

// Stream::next() without the GIL; nullptr after the last batch; a daemon error raises BatchdError. `timeout` in
// seconds, None or <= 0 = wait as long as it takes; past it BatchdError with code "deadline exceeded".
SharedBatch next_batch(batchd::Stream& s, const py::object& timeout) {
  const auto wait = batchd_py::timeout_of(timeout);
  batchd::Result<std::optional<batchd::Batch>> r = std::optional<batchd::Batch>();
  {
    py::gil_scoped_release release;
    r = wait ? s.next(*wait) : s.next();
  }
  auto batch = unwrap(std::move(r));
  return batch ? std::make_shared<batchd::Batch>(std::move(*batch)) : nullptr;
}

}  // namespace

PYBIND11_MODULE(_batchd, m) {
  m.doc() = "Low-level binding of the batchd client library; use batchd.Loader.";
  py::dict error_attrs;
  error_attrs["code"] = py::none();  // one made in Python (batchd.Loader's own errors) has no class: .code is None
  batchd_py::error_class = py::reinterpret_borrow<py::object>(PyErr_NewExceptionWithDoc(
      "batchd.BatchdError",
      "An error reported by the batchd daemon or client library; .code names its class (None if it has none).",
      PyExc_RuntimeError, error_attrs.ptr()));
  m.attr("BatchdError") = batchd_py::error_class;

  py::class_<batchd::Batch, SharedBatch>(m, "Batch")
      .def_property_readonly("epoch", &batchd::Batch::epoch)
      .def_property_readonly("index", &batchd::Batch::index)
      .def_property_readonly("sequence", &batchd::Batch::sequence)
      .def_property_readonly("size", &batchd::Batch::size)
      .def_property_readonly("skipped", &batchd::Batch::skipped)
      .def("arrays", [](const SharedBatch& self) { return arrays_of(self); },
           "dict name -> numpy array viewing the batch in shared memory; keeps the lease while alive")
      .def("release", [](const SharedBatch& self) { self->release(); },
           "ends the lease now; arrays made from this batch must not be used afterwards");

  py::class_<batchd::Stream, std::shared_ptr<batchd::Stream>>(m, "Stream")
      .def_property_readonly("info", [](const batchd::Stream& s) { return batchd_py::info_dict(s.info()); })
      .def("next",
           [](batchd::Stream& s, const py::object& timeout) -> py::object {
             auto batch = next_batch(s, timeout);
             if (!batch) return py::none();
             return py::cast(std::move(batch));
           },
           py::arg("timeout") = py::none(),
           "the next batch (in task order; as they are made on a completion_order stream), or None after the last")
      .def("next_arrays",
           [](batchd::Stream& s, const py::object& timeout) -> py::object {
             auto batch = next_batch(s, timeout);
             if (!batch) return py::none();
             return py::make_tuple(batch->epoch(), arrays_of(batch));
           },
           py::arg("timeout") = py::none(),
           "(epoch, Batch.arrays()) of the next batch in one call (the arrays hold the lease), or None after the "
           "last")
      .def("close", [](batchd::Stream& s) {
        batchd::Status st;
        {
          py::gil_scoped_release release;  // a request: up to the request timeout
          st = s.close();
        }
        if (!st.ok()) raise(st.error());
      });

  py::class_<batchd::Client, std::shared_ptr<batchd::Client>>(m, "Client")
      .def(py::init([](const std::string& socket, const py::object& request_timeout, const py::object& owner) {
             const auto options = batchd_py::connect_options(socket, request_timeout, owner);
             batchd::Result<batchd::Client> r = batchd::Error(batchd::ErrorCode::kInternal, "");
             {
               py::gil_scoped_release release;  // waits up to the request timeout on a full listen backlog
               r = batchd::Client::connect(options);
             }
             return std::make_shared<batchd::Client>(unwrap(std::move(r)));
           }),
           py::arg("socket") = "", py::arg("request_timeout") = py::none(), py::arg("expected_owner") = py::none())
      .def_property_readonly(
          "daemon", [](const batchd::Client& c) { return batchd_py::credentials_dict(c.daemon_credentials()); },
          "who serves the socket (SO_PEERCRED at connect): pid, uid, gid, user, and warning ('' or why it may be "
          "another user's daemon)")
      .def("open_stream",
           [](batchd::Client& c, py::kwargs kw) {
             const auto o = batchd_py::options_from(kw);
             batchd::Result<batchd::Stream> r = batchd::Error(batchd::ErrorCode::kInternal, "");
             {
               py::gil_scoped_release release;
               r = c.open_stream(o);
             }
             return std::make_shared<batchd::Stream>(unwrap(std::move(r)));
           })
      .def("plan_stream", [](batchd::Client& c, py::kwargs kw) {
        const auto o = batchd_py::options_from(kw);
        batchd::Result<batchd::StreamInfo> r = batchd::Error(batchd::ErrorCode::kInternal, "");
        {
          py::gil_scoped_release release;
          r = c.plan_stream(o);
        }
        return batchd_py::info_dict(unwrap(std::move(r)));
      });
  batchd_py::bind_cuda(m);
  batchd_py::bind_status(m);
  batchd_py::bind_dtypes(m);
  batchd_py::bind_folder(m);
  batchd_py::bind_worker(m);
}
