// Built instead of cuda_binding.cc where batchd has no CUDA path (BATCHD_WITH_CUDA=OFF or no toolkit).
#include "binding.h"

void batchd_py::bind_cuda(py::module_& m) {
  m.attr("has_cuda") = false;
  m.attr("cuda_unavailable_reason") = "batchd was built without its CUDA path (BATCHD_WITH_CUDA=OFF or no CUDA toolkit)";
}
