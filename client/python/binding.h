// binding.h — internal to the _batchd extension: error conversion and stream options shared by its files.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <optional>

#include "batchd/client.h"

namespace py = pybind11;

namespace batchd_py {

// Raises batchd.BatchdError carrying the message and .code.
[[noreturn]] void raise(const batchd::Error& e);

template <typename T>
T unwrap(batchd::Result<T> r) {
  if (!r.ok()) raise(r.error());
  return std::move(r).value();
}

// Stream.info: the StreamInfo as a dict (id, strategy, segment_name, segment_bytes, depth, dataset, dataset_size,
// subset_size, samples_per_epoch, batches_per_epoch, total_batches, first_epoch, share, joined_at_batch, spec).
py::dict info_dict(const batchd::StreamInfo& i);

// A Python timeout in seconds (None or <= 0: wait as long as it takes) as Stream::next's; std::nullopt for none
// (batchd_module.cc).
std::optional<std::chrono::milliseconds> timeout_of(const py::object& seconds);

// StreamOptions from the keyword arguments of Client.open_stream / plan_stream (TypeError on an unknown one).
batchd::StreamOptions options_from(const py::dict& kw);

// open_stream's folder= (a dict: root, classes, num_samples, class_sizes, digest; TypeError on another key) and
// indices= (an iterable of ints >= 0, ValueError naming the first negative one), and _batchd.folder_digest
// (folder_binding.cc).
batchd::FolderRef folder_from(const py::handle& folder);
std::vector<uint64_t> indices_from(const py::handle& indices);
void bind_folder(py::module_& m);

// open_stream's external= (a dict: size, fields = [(name, dtype name, sample_shape), ...], workers, name; TypeError
// on another key, ValueError on an unknown dtype name) and _batchd.AttachedWorker (worker_binding.cc).
batchd::ExternalDataset external_from(const py::handle& external);
void bind_worker(py::module_& m);

// A pipeline spec from its Python form {"ops": [op dict, ...], "batch_ops": [...]} (TypeError naming the place of a
// value of no wire kind), and back: numbers as floats, as the daemon's canonical form has them (spec_binding.cc).
batchd::PipelineSpec spec_from(const py::handle& spec);
py::dict spec_dict(const batchd::PipelineSpec& spec);

// ConnectOptions of Client() and status(): request_timeout in seconds (None = $BATCHD_TIMEOUT, else 30; 0 = no
// deadline; ValueError if negative), expected_owner a uid or user name (None = $BATCHD_EXPECT_OWNER); warn = false
// (connect_binding.cc).
batchd::ConnectOptions connect_options(const std::string& socket, const py::object& request_timeout,
                                       const py::object& expected_owner);
// DaemonCredentials as {"pid", "uid", "gid", "user", "warning"}.
py::dict credentials_dict(const batchd::DaemonCredentials& d);

// Adds _batchd.has_cuda and, where batchd was built with the CUDA path, Client.open_device_stream,
// Client.open_pinned_stream and the DeviceStream and PinnedStream types (cuda_binding.cc); without the CUDA path, cuda_binding_none.cc sets has_cuda = False and the
// reason (cuda_unavailable_reason).
void bind_cuda(py::module_& m);

// Adds _batchd.__version__, default_socket_path() and status() (status_binding.cc), for `python -m batchd`.
void bind_status(py::module_& m);

// The dtype mapping (dtype_binding.cc): the numpy dtype of a host array of `d` (bfloat16: int16 carrying metadata
// {"batchd_dtype": "bfloat16"}), the __cuda_array_interface__ typestr of a device array (bfloat16: "<i2"), a numpy
// array viewing tensor `t` (C-contiguous, kept alive by `base`), and _batchd._array_over for tests.
py::dtype numpy_dtype(batchd::DType d);
const char* cuda_typestr(batchd::DType d);
py::array array_over(const batchd::Tensor& t, py::handle base);
void bind_dtypes(py::module_& m);

}  // namespace batchd_py
