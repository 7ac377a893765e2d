// worker_binding.cc — _batchd.AttachedWorker (batchd/worker.h) for the Loader's worker processes
// (batchd/_own/worker_main.py), and open_stream's external= (batchd/_own/dataset.py builds it).
#include <pybind11/stl.h>

#include <chrono>

#include "batchd/worker.h"
#include "binding.h"

namespace batchd_py {

namespace {

batchd::DType dtype_named(const std::string& name) {
  for (int d = 0; d <= static_cast<int>(batchd::DType::kInt8); ++d) {
    if (name == batchd::dtype_name(static_cast<batchd::DType>(d))) return static_cast<batchd::DType>(d);
  }
  throw py::value_error("unknown batchd dtype '" + name + "' (uint8, int8, int16, int32, int64, float16, bfloat16, "
                        "float32, float64, bool)");
}

struct PyWorker {
  std::unique_ptr<batchd::AttachedWorker> worker;
};

}  // namespace

batchd::ExternalDataset external_from(const py::handle& external) {
  batchd::ExternalDataset e;
  for (auto item : external.cast<py::dict>()) {
    const std::string k = py::str(item.first);
    const py::handle v = item.second;
    if (k == "size") e.size = v.cast<uint64_t>();
    else if (k == "workers") e.workers = v.cast<uint32_t>();
    else if (k == "name") e.name = v.cast<std::string>();
    else if (k == "whole_batches") e.whole_batches = v.cast<bool>();
    else if (k == "round_robin") e.round_robin = v.cast<bool>();
    else if (k == "completion_order") e.completion_order = v.cast<bool>();
    else if (k == "fields") {
      for (auto f : v) {
        auto t = f.cast<py::tuple>();
        if (t.size() != 3) throw py::type_error("external fields are (name, dtype, sample_shape) tuples");
        e.fields.push_back({t[0].cast<std::string>(), dtype_named(t[1].cast<std::string>()),
                            t[2].cast<std::vector<int64_t>>()});
      }
    } else {
      throw py::type_error("external= has no key '" + k + "' (size, fields, workers, name, whole_batches, round_robin, "
                         "completion_order)");
    }
  }
  return e;
}

void bind_worker(py::module_& m) {
  using Task = batchd::AttachedWorker::Task;
  py::class_<Task>(m, "WorkerTask", "One task of an attached worker: rows [begin, begin + len(indices)) of a slot.")
      .def_readonly("stream_id", &Task::stream_id)
      .def_readonly("sequence", &Task::sequence)
      .def_readonly("epoch", &Task::epoch)
      .def_readonly("batch", &Task::batch)
      .def_readonly("slot", &Task::slot)
      .def_readonly("begin", &Task::begin)
      .def_readonly("made", &Task::made)
      .def_readonly("attempt", &Task::attempt)
      .def_readonly("batch_samples", &Task::batch_samples)
      .def_readonly("indices", &Task::indices)
      .def_readonly("copies", &Task::copies);

  py::class_<PyWorker>(m, "AttachedWorker",
                       "A worker process of the trainer's own Dataset, attached to one of its streams (batchd/worker.h). "
                       "AttachedWorker(socket, stream_id, parent_pid=0, request_timeout=None, expected_owner=None, worker=0) "
                       "(worker: the Loader's worker id, which a round_robin stream routes by): "
                       "BatchdError if the daemon refuses (not this uid's stream, not external, "
                       "limits.max_attached_workers). The process exits (status 75) when the daemon detaches it past "
                       "a deadline, the daemon goes away, or its parent is no longer parent_pid.")
      .def(py::init([](const std::string& socket, uint64_t stream_id, int parent_pid, const py::object& timeout,
                       const py::object& owner, uint32_t worker) {
             batchd::AttachedWorker::Options options;
             options.worker = worker;
             options.connect = connect_options(socket, timeout, owner);
             options.parent_pid = parent_pid;
             batchd::Result<std::unique_ptr<batchd::AttachedWorker>> attached = batchd::Error(batchd::ErrorCode::kInternal, "");
             {
               py::gil_scoped_release release;
               attached = batchd::AttachedWorker::attach(stream_id, options);
             }
             return PyWorker{unwrap(std::move(attached))};
           }),
           py::arg("socket"), py::arg("stream_id"), py::arg("parent_pid") = 0, py::arg("request_timeout") = py::none(),
           py::arg("expected_owner") = py::none(), py::arg("worker") = 0)
      .def_property_readonly("fields",
                             [](const PyWorker& w) {
                               py::list out;
                               for (const auto& f : w.worker->fields()) {
                                 out.append(py::make_tuple(f.name, batchd::dtype_name(f.dtype),
                                                           py::tuple(py::cast(f.sample_shape))));
                               }
                               return out;
                             },
                             "[(name, dtype name, sample_shape)] of the stream's fields, in order (no \"index\")")
      .def_property_readonly("worker", [](const PyWorker& w) { return w.worker->worker(); })
      .def_property_readonly("seed", [](const PyWorker& w) { return w.worker->seed(); })
      .def_property_readonly("batch_size", [](const PyWorker& w) { return w.worker->batch_size(); })
      .def_property_readonly("stream_id", [](const PyWorker& w) { return w.worker->stream_id(); })
      .def(
          "next_task",
          [](PyWorker& w, const py::object& timeout) -> py::object {
            batchd::Result<std::optional<Task>> task = batchd::Error(batchd::ErrorCode::kInternal, "");
            const auto wait = timeout_of(timeout);  // reads a Python object: with the GIL held
            {
              py::gil_scoped_release release;
              task = w.worker->next_task(wait);
            }
            auto t = unwrap(std::move(task));
            return t ? py::cast(std::move(*t)) : py::none();
          },
          py::arg("timeout") = py::none(),
          "The next task, or None once the stream is closed; BatchdError \"deadline exceeded\" at timeout (seconds)")
      .def(
          "arrays",
          [](py::object self, const Task& task) {
            auto& w = self.cast<PyWorker&>();
            py::list out;
            const auto& fields = w.worker->fields();
            for (size_t i = 0; i < fields.size(); ++i) {
              void* first = w.worker->row(task, i, task.begin);
              if (first == nullptr) throw py::value_error("a task this worker was not given");
              batchd::Tensor t;
              t.dtype = fields[i].dtype;
              t.shape = {static_cast<int64_t>(task.indices.size())};
              t.shape.insert(t.shape.end(), fields[i].sample_shape.begin(), fields[i].sample_shape.end());
              t.data = first;
              t.nbytes = task.indices.size() * fields[i].sample_bytes;
              out.append(array_over(t, self));
            }
            return out;
          },
          "Writable numpy arrays over the task's rows of each field: [len(indices)] + sample_shape (row i is sample "
          "indices[i]); only these rows are reachable")
      .def("progress", [](PyWorker& w, const Task& task, int64_t sample) { w.worker->set_progress(task, sample); })
      .def(
          "done",
          [](PyWorker& w, const Task& task, int64_t nanos, int64_t dataset_nanos, int64_t collate_nanos,
             std::vector<uint64_t> field_bytes) {
            batchd::Status st = batchd::ok_status();
            {
              py::gil_scoped_release release;
              st = w.worker->done(task, std::chrono::nanoseconds(nanos), std::chrono::nanoseconds(dataset_nanos),
                                  std::chrono::nanoseconds(collate_nanos), field_bytes);
            }
            if (!st.ok()) raise(st.error());
          },
          py::arg("task"), py::arg("nanos") = 0, py::arg("dataset_nanos") = 0, py::arg("collate_nanos") = 0,
          py::arg("field_bytes") = std::vector<uint64_t>{},
          "Writes the task's index rows and answers it; nanos: the task's time, dataset_nanos: in the dataset's code "
          "(the stream's read stage), collate_nanos: writing rows (its normalize stage); field_bytes: per field, the "
          "bytes written from the task's first row (a collated batch's encoded size; default: all its rows), "
          "reported to the daemon, which checks them against the slot (BatchdError over the rows)")
      .def("fail", [](PyWorker& w, const Task& task, int64_t sample, const std::string& message) {
        batchd::Status st = batchd::ok_status();
        {
          py::gil_scoped_release release;
          st = w.worker->fail_sample(task, sample, message);
        }
        if (!st.ok()) raise(st.error());
      });
}

}  // namespace batchd_py
