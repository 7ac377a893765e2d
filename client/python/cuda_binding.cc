// cuda_binding.cc — the CUDA path for Python: Client.open_device_stream -> DeviceStream, whose next(stream) returns
// device arrays exposing __cuda_array_interface__ (torch.as_tensor wraps them without a copy). Every array of a
// batch shares one reference to its DeviceBatch: the buffers go back to batchd's pool when the last tensor made from
// them is freed, ordered after the work enqueued until then on the stream the batch was delivered to.
#include <pybind11/stl.h>

#include "batchd/cuda.h"
#include "binding.h"

namespace {

using SharedDeviceBatch = std::shared_ptr<batchd::cuda::DeviceBatch>;

// A PinnedStream and how to find the trainer's current CUDA stream (a Python callable returning a cudaStream_t as
// an int: torch.cuda.current_stream(device).cuda_stream), shared by the stream object and every batch's arrays.
struct PinnedSource {
  batchd::cuda::PinnedStream stream;
  py::object current_stream;
};
using SharedPinned = std::shared_ptr<PinnedSource>;

// The base of every array of one pinned batch. When the last array (and every torch tensor viewing one) is freed,
// the lease is handed back with release_after() on the stream current then: a .to(device, non_blocking=True)
// enqueued there before may still be reading the slot. Runs with the GIL held (a capsule's destructor).
struct PinnedLease {
  SharedPinned source;
  batchd::Batch batch;
  ~PinnedLease() {
    cudaStream_t stream = nullptr;
    bool known = false;
    try {
      stream = reinterpret_cast<cudaStream_t>(source->current_stream().cast<uintptr_t>());
      known = true;
    } catch (py::error_already_set&) {
      PyErr_Clear();  // e.g. at interpreter shutdown: wait for the whole device below instead
    } catch (const py::cast_error&) {
    }
    if (!known) {
      (void)cudaSetDevice(source->stream.device());
      (void)cudaDeviceSynchronize();  // no copy from the slot can be in flight after this
      batch.release();
      return;
    }
    (void)source->stream.release_after(std::move(batch), stream);  // an error released it after waiting
  }
};

// One tensor of a device batch; keeps the batch alive.
struct DeviceArray {
  SharedDeviceBatch batch;
  const batchd::cuda::DeviceTensor* tensor;
};

}  // namespace

void batchd_py::bind_cuda(py::module_& m) {
  m.attr("has_cuda") = true;
  m.attr("cuda_unavailable_reason") = "";
  py::class_<DeviceArray>(m, "DeviceArray")
      .def_property_readonly("__cuda_array_interface__", [](const DeviceArray& a) {
        py::dict d;
        d["shape"] = py::tuple(py::cast(a.tensor->shape));
        d["typestr"] = cuda_typestr(a.tensor->dtype);
        d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(a.tensor->data), false);
        d["version"] = 3;
        d["strides"] = py::none();  // C-contiguous
        d["stream"] = py::none();   // next() already ordered the copy before the consumer stream's later work
        return d;
      })
      .def_property_readonly(
          "batchd_dtype", [](const DeviceArray& a) { return batchd::dtype_name(a.tensor->dtype); },
          "the tensor's batchd dtype name: \"bfloat16\" for an array whose typestr says int16 (its bits)");

  py::class_<batchd::cuda::DeviceStream, std::shared_ptr<batchd::cuda::DeviceStream>>(m, "DeviceStream")
      .def("next",
           [](batchd::cuda::DeviceStream& s, uintptr_t stream) -> py::object {
             batchd::Result<std::optional<batchd::cuda::DeviceBatch>> r = std::optional<batchd::cuda::DeviceBatch>();
             {
               py::gil_scoped_release release;
               r = s.next(reinterpret_cast<cudaStream_t>(stream));
             }
             auto batch = unwrap(std::move(r));
             if (!batch) return py::none();
             auto shared = std::make_shared<batchd::cuda::DeviceBatch>(std::move(*batch));
             py::dict arrays;
             for (const auto& t : shared->tensors()) arrays[py::str(t.name)] = DeviceArray{shared, &t};
             return py::make_tuple(shared->epoch(), arrays);
           },
           py::arg("stream"),
           "(epoch, {name: DeviceArray}) of the next batch, its copy ordered before later work on `stream` (a "
           "cudaStream_t as an int: torch.cuda.current_stream().cuda_stream), or None after the last")
      .def_property_readonly("pinned",
                             [](const batchd::cuda::DeviceStream& s) {
                               return s.pin_status().pinning == batchd::cuda::Pinning::kRegistered;
                             })
      .def_property_readonly("pin_reason", [](const batchd::cuda::DeviceStream& s) { return s.pin_status().reason; })
      .def("close", [](batchd::cuda::DeviceStream& s) {
        auto st = s.close();
        if (!st.ok()) raise(st.error());
      });

  py::class_<PinnedSource, SharedPinned>(m, "PinnedStream")
      .def_property_readonly("info", [](const PinnedSource& s) { return batchd_py::info_dict(s.stream.info()); })
      .def_property_readonly("pinned",
                             [](const PinnedSource& s) {
                               return s.stream.pin_status().pinning == batchd::cuda::Pinning::kRegistered;
                             })
      .def_property_readonly("pin_reason", [](const PinnedSource& s) { return s.stream.pin_status().reason; })
      .def_property_readonly("host_waits", [](const PinnedSource& s) { return s.stream.host_waits(); })
      .def("next_arrays",
           [](const SharedPinned& s, const py::object& timeout) -> py::object {
             const auto wait = batchd_py::timeout_of(timeout);
             batchd::Result<std::optional<batchd::Batch>> r = std::optional<batchd::Batch>();
             {
               py::gil_scoped_release release;
               r = wait ? s->stream.next(*wait) : s->stream.next();
             }
             auto batch = unwrap(std::move(r));
             if (!batch) return py::none();
             const uint64_t epoch = batch->epoch();
             auto* lease = new PinnedLease{s, std::move(*batch)};
             py::capsule base(lease, [](void* p) { delete static_cast<PinnedLease*>(p); });
             py::dict arrays;
             for (const auto& t : lease->batch.tensors()) arrays[py::str(t.name)] = batchd_py::array_over(t, base);
             return py::make_tuple(epoch, arrays);
           },
           py::arg("timeout") = py::none(),
           "(epoch, {name: numpy array}) of the next batch, the arrays in page-locked memory; the lease goes back "
           "once the last array is freed and the work then enqueued on the current CUDA stream has completed; None "
           "after the last")
      .def("close", [](PinnedSource& s) {
        batchd::Status st;
        {
          py::gil_scoped_release release;  // waits for deferred leases' events, then a request
          st = s.stream.close();
        }
        if (!st.ok()) raise(st.error());
      });

  m.attr("Client").attr("open_pinned_stream") = py::cpp_function(
      [](batchd::Client& c, int device, py::object current_stream, bool pin, py::kwargs kw) {
        const auto o = options_from(kw);
        batchd::Result<batchd::cuda::PinnedStream> r = batchd::Error(batchd::ErrorCode::kInternal, "");
        {
          py::gil_scoped_release release;
          auto stream = c.open_stream(o);
          r = stream.ok() ? batchd::cuda::PinnedStream::open(std::move(stream).value(), device, pin)
                          : batchd::Result<batchd::cuda::PinnedStream>(stream.error());
        }
        return std::make_shared<PinnedSource>(PinnedSource{unwrap(std::move(r)), std::move(current_stream)});
      },
      py::is_method(m.attr("Client")), py::arg("device"), py::arg("current_stream"), py::arg("pin") = true,
      "opens a stream whose host batches are page-locked on CUDA device `device` (PinnedStream; kwargs: as "
      "open_stream); current_stream() returns the trainer's current cudaStream_t as an int (torch: "
      "lambda: torch.cuda.current_stream(device).cuda_stream)");

  m.attr("Client").attr("open_device_stream") = py::cpp_function(
      [](batchd::Client& c, int device, bool pin, py::kwargs kw) {
        const auto o = options_from(kw);
        batchd::Result<batchd::cuda::DeviceStream> r = batchd::Error(batchd::ErrorCode::kInternal, "");
        {
          py::gil_scoped_release release;
          auto stream = c.open_stream(o);
          if (!stream.ok()) {
            r = stream.error();
          } else {
            batchd::cuda::DeviceOptions d;
            d.device = device;
            d.pin = pin;
            r = batchd::cuda::DeviceStream::open(std::move(stream).value(), d);
          }
        }
        return std::make_shared<batchd::cuda::DeviceStream>(unwrap(std::move(r)));
      },
      py::is_method(m.attr("Client")), py::arg("device"), py::arg("pin") = true,
      "opens a stream and its DeviceStream on CUDA device `device` (kwargs: as open_stream)");
}
