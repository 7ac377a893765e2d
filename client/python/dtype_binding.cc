// dtype_binding.cc — how each batchd dtype reaches Python: the numpy dtype of a host array, the typestr of a device
// array's __cuda_array_interface__, and the torch dtype batchd/_loader/support.py makes of them.
//
// numpy has every batchd dtype but bfloat16: a bfloat16 tensor is an int16 array whose numpy dtype carries
// metadata {"batchd_dtype": "bfloat16"} (bit patterns, the upper halves of float32 values);
// _loader.support.torch_tensor() views it as torch.bfloat16 without a copy (Tensor.view(torch.bfloat16)). Device
// arrays do the same through their `batchd_dtype` attribute (cuda_binding.cc), since __cuda_array_interface__ has no
// bfloat16 typestr either.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <stdexcept>

#include "binding.h"

namespace batchd_py {

namespace {

py::dtype bfloat16_storage() {
  // Built once per process (the GIL is held on every call), kept for the interpreter's life.
  static py::object* dtype = new py::object(
      py::module_::import("numpy").attr("dtype")("int16", py::arg("metadata") = py::dict(py::arg("batchd_dtype") =
                                                                                             "bfloat16")));
  return py::reinterpret_borrow<py::dtype>(*dtype);
}

}  // namespace

py::dtype numpy_dtype(batchd::DType d) {
  switch (d) {
    case batchd::DType::kUInt8: return py::dtype::of<uint8_t>();
    case batchd::DType::kFloat32: return py::dtype::of<float>();
    case batchd::DType::kInt64: return py::dtype::of<int64_t>();
    case batchd::DType::kFloat16: return py::dtype("float16");
    case batchd::DType::kBFloat16: return bfloat16_storage();
    case batchd::DType::kFloat64: return py::dtype::of<double>();
    case batchd::DType::kInt32: return py::dtype::of<int32_t>();
    case batchd::DType::kBool: return py::dtype::of<bool>();
    case batchd::DType::kInt16: return py::dtype::of<int16_t>();
    case batchd::DType::kInt8: return py::dtype::of<int8_t>();
  }
  return py::dtype::of<uint8_t>();
}

const char* cuda_typestr(batchd::DType d) {
  switch (d) {
    case batchd::DType::kUInt8: return "|u1";
    case batchd::DType::kFloat32: return "<f4";
    case batchd::DType::kInt64: return "<i8";
    case batchd::DType::kFloat16: return "<f2";
    case batchd::DType::kBFloat16: return "<i2";  // bits; viewed as torch.bfloat16 by batchd_dtype
    case batchd::DType::kFloat64: return "<f8";
    case batchd::DType::kInt32: return "<i4";
    case batchd::DType::kBool: return "|b1";
    case batchd::DType::kInt16: return "<i2";
    case batchd::DType::kInt8: return "|i1";
  }
  return "|u1";
}

py::array array_over(const batchd::Tensor& t, py::handle base) {
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end()), strides(t.shape.size());
  py::ssize_t stride = static_cast<py::ssize_t>(batchd::dtype_size(t.dtype));
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(numpy_dtype(t.dtype), shape, strides, const_cast<void*>(t.data), base);
}

void bind_dtypes(py::module_& m) {
  // For tests (tests/python/test_dtypes.py): the array Batch.arrays() makes for a tensor of `dtype` whose bytes are
  // `buffer`'s (a writable buffer, e.g. a bytearray, kept alive by the array).
  m.def(
      "_array_over",
      [](py::buffer buffer, const std::string& dtype, const std::vector<int64_t>& shape) {
        const py::buffer_info info = buffer.request(/*writable=*/true);
        batchd::Tensor t;
        bool known = false;
        for (int d = 0; d <= static_cast<int>(batchd::DType::kInt8); ++d) {
          if (dtype == batchd::dtype_name(static_cast<batchd::DType>(d))) {
            t.dtype = static_cast<batchd::DType>(d);
            known = true;
          }
        }
        if (!known) throw py::value_error("unknown batchd dtype '" + dtype + "'");
        t.shape = shape;
        t.data = info.ptr;
        t.nbytes = static_cast<size_t>(t.numel()) * batchd::dtype_size(t.dtype);
        if (t.nbytes > static_cast<size_t>(info.size * info.itemsize)) {
          throw py::value_error("buffer of " + std::to_string(info.size * info.itemsize) + " bytes is smaller than " +
                                std::to_string(t.nbytes));
        }
        return array_over(t, buffer);
      },
      py::arg("buffer"), py::arg("dtype"), py::arg("shape"));
}

}  // namespace batchd_py
