// ops_testing.h — the Python module `batchd_ops_testing` (tests only, never installed): batchd's image ops and their
// random draws, callable on numpy arrays, so that tests/ops/test_*.py compare them with torchvision 0.29 itself on
// real photographs. Each family binds its functions in its own bind_<family>.cc.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "transforms/kernels/resample.h"

namespace batchd::testing {

namespace py = pybind11;
using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

// A numpy uint8 array [H, W, 3] as an RgbImage (copied), and back. ValueError for another shape.
daemon::RgbImage to_image(const U8Array& a);
U8Array from_image(const daemon::RgbImage& image);

void bind_resample(py::module_& m);
void bind_geometry(py::module_& m);
void bind_augment(py::module_& m);
void bind_color(py::module_& m);
void bind_spec(py::module_& m);  // plan() and run(): a whole spec through the real executor
void bind_tensor(py::module_& m);  // dtype casts, random_erasing, random draws
void bind_batch(py::module_& m);   // mixup, cutmix

}  // namespace batchd::testing
