// cuda_binding.cc — the CUDA path for Python: Client.open_device_stream -> DeviceStream, whose next(stream) returns
// device arrays exposing __cuda_array_interface__ (torch.as_tensor wraps them without a copy). Every array of a
// batch shares one reference to its DeviceBatch: the buffers go back to batchd's pool when the last tensor made from
// them is freed, ordered after the work enqueued until then on the stream the batch was delivered to.
#include <pybind11/stl.h>

#include "batchd/cuda.h"
#include "binding.h"

namespace {

using SharedDeviceBatch = std::shared_ptr<batchd::cuda::DeviceBatch>;

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
