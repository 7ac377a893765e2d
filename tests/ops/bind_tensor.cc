// The tensor-side functions: dtype casts (transforms/kernels/dtype_cast.h), RandomErasing
// (transforms/kernels/tensor/erasing.h) and the random draws under them (transforms/kernels/tensor/random_draws.h).
#include <pybind11/stl.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <variant>

#include "ops_testing.h"
#include "transforms/kernels/dtype_cast.h"
#include "transforms/kernels/tensor/erasing.h"
#include "transforms/kernels/tensor/random_draws.h"

namespace batchd::testing {

namespace {

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

// out = f(in) element by element, through the array form of the cast.
template <typename In, typename Out>
Array<Out> cast_array(const Array<In>& in, void (*f)(const In*, Out*, size_t)) {
  Array<Out> out(std::vector<py::ssize_t>(in.shape(), in.shape() + in.ndim()));
  f(in.data(), out.mutable_data(), static_cast<size_t>(in.size()));
  return out;
}

daemon::TensorShape shape_of(const Array<float>& t, bool hwc) {
  if (t.ndim() != 3) throw std::invalid_argument("expected a float32 tensor of 3 dimensions (CHW, or HWC)");
  daemon::TensorShape s;
  s.channels = static_cast<int>(hwc ? t.shape(2) : t.shape(0));
  s.height = static_cast<int>(hwc ? t.shape(0) : t.shape(1));
  s.width = static_cast<int>(hwc ? t.shape(1) : t.shape(2));
  s.hwc = hwc;
  return s;
}

Array<float> copy_of(const Array<float>& t) {
  Array<float> out(std::vector<py::ssize_t>(t.shape(), t.shape() + t.ndim()));
  std::memcpy(out.mutable_data(), t.data(), sizeof(float) * t.size());
  return out;
}

using Value = std::variant<double, std::vector<double>, std::string>;

daemon::ErasingParams erasing_params(double p, std::pair<double, double> scale, std::pair<double, double> ratio,
                                     const Value& value) {
  daemon::ErasingParams params;
  params.p = p;
  params.scale_lo = scale.first;
  params.scale_hi = scale.second;
  params.ratio_lo = ratio.first;
  params.ratio_hi = ratio.second;
  if (const auto* v = std::get_if<double>(&value)) {
    params.value = {daemon::EraseValue::Kind::kConstant, {static_cast<float>(*v)}};
  } else if (const auto* list = std::get_if<std::vector<double>>(&value)) {
    params.value.kind = daemon::EraseValue::Kind::kPerChannel;
    params.value.values.assign(list->begin(), list->end());
  } else {
    if (std::get<std::string>(value) != "random") throw std::invalid_argument("value must be 'random'");
    params.value = {daemon::EraseValue::Kind::kRandom, {}};
  }
  return params;
}

// `count` draws of `draw` from one SampleRng.
template <typename Draw>
Array<double> draws(uint64_t seed, int64_t count, Draw draw) {
  Array<double> out(count);
  daemon::SampleRng rng(seed, 0, 0);
  for (int64_t i = 0; i < count; ++i) out.mutable_data()[i] = draw(rng);
  return out;
}

}  // namespace

void bind_tensor(py::module_& m) {
  m.def("to_half", [](const Array<float>& a) { return cast_array<float, uint16_t>(a, daemon::cast_float_to_half); },
        "float32 -> float16 bits (uint16), as Tensor.to(torch.float16)");
  m.def("from_half",
        [](const Array<uint16_t>& a) { return cast_array<uint16_t, float>(a, daemon::cast_half_to_float); });
  m.def("to_bfloat16",
        [](const Array<float>& a) { return cast_array<float, uint16_t>(a, daemon::cast_float_to_bfloat16); },
        "float32 -> bfloat16 bits (uint16), as Tensor.to(torch.bfloat16)");
  m.def("from_bfloat16",
        [](const Array<uint16_t>& a) { return cast_array<uint16_t, float>(a, daemon::cast_bfloat16_to_float); });
  m.def("image_to_uint8",
        [](const Array<float>& a) { return cast_array<float, uint8_t>(a, daemon::image_float_to_uint8); },
        "ConvertImageDtype(torch.uint8) of a float32 tensor");
  m.def("image_to_float",
        [](const Array<uint8_t>& a) { return cast_array<uint8_t, float>(a, daemon::image_uint8_to_float); },
        "ConvertImageDtype(torch.float32) of a uint8 tensor");

  m.def(
      "erase",
      [](const Array<float>& tensor, int i, int j, int h, int w, const Array<float>& values, bool hwc) {
        const auto shape = shape_of(tensor, hwc);
        if (i < 0 || j < 0 || h < 0 || w < 0 || i + h > shape.height || j + w > shape.width) {
          throw std::invalid_argument("box outside the tensor");
        }
        Array<float> out = copy_of(tensor);
        daemon::erase(out.mutable_data(), shape, {i, j, h, w},
                      std::span<const float>(values.data(), static_cast<size_t>(values.size())));
        return out;
      },
      py::arg("tensor"), py::arg("i"), py::arg("j"), py::arg("h"), py::arg("w"), py::arg("values"),
      py::arg("hwc") = false, "F.erase(tensor, i, j, h, w, v): values 1, C or C*h*w (CHW order) floats");

  m.def(
      "random_erasing_params",
      [](int channels, int height, int width, std::pair<double, double> scale, std::pair<double, double> ratio,
         bool random, uint64_t seed, int64_t count) {
        auto params = erasing_params(1.0, scale, ratio, random ? Value(std::string("random")) : Value(0.0));
        const daemon::TensorShape shape{channels, height, width, false};
        Array<int64_t> out({count, int64_t{5}});
        auto r = out.mutable_unchecked<2>();
        std::vector<float> values;
        for (int64_t index = 0; index < count; ++index) {
          daemon::SampleRng rng(seed, 0, index);
          const auto box = daemon::random_erasing_params(shape, params, rng, &values);
          const daemon::EraseBox b = box.value_or(daemon::EraseBox{0, 0, height, width});
          r(index, 0) = box.has_value();
          r(index, 1) = b.top;
          r(index, 2) = b.left;
          r(index, 3) = b.height;
          r(index, 4) = b.width;
        }
        return out;
      },
      py::arg("channels"), py::arg("height"), py::arg("width"), py::arg("scale"), py::arg("ratio"),
      py::arg("random"), py::arg("seed"), py::arg("count"),
      "[count, 5] int64: (found, i, j, h, w) of RandomErasing.get_params for samples 0..count-1 of `seed` "
      "(not found: (0, 0, 0, H, W), get_params' fallback)");

  m.def(
      "random_erasing",
      [](const Array<float>& tensor, double p, std::pair<double, double> scale, std::pair<double, double> ratio,
         const Value& value, uint64_t seed, uint64_t epoch, int64_t index, bool hwc) {
        daemon::RandomErasing op(erasing_params(p, scale, ratio, value));
        Array<float> out = copy_of(tensor);
        daemon::SampleRng rng(seed, epoch, index);
        const auto box = op.apply(out.mutable_data(), shape_of(tensor, hwc), rng);
        py::object b = py::none();
        if (box) b = py::make_tuple(box->top, box->left, box->height, box->width);
        return py::make_tuple(out, b);
      },
      py::arg("tensor"), py::arg("p"), py::arg("scale"), py::arg("ratio"), py::arg("value"), py::arg("seed"),
      py::arg("epoch"), py::arg("index"), py::arg("hwc") = false,
      "RandomErasing(p, scale, ratio, value)(tensor) for sample (seed, epoch, index): (tensor, (i, j, h, w) or None)");

  m.def(
      "normal_draws",
      [](uint64_t seed, int64_t count, bool fill) {
        Array<double> out(count);
        daemon::SampleRng rng(seed, 0, 0);
        if (fill) {
          std::vector<float> values(static_cast<size_t>(count));
          daemon::fill_normal(rng, values.data(), values.size());
          for (int64_t i = 0; i < count; ++i) out.mutable_data()[i] = values[i];
        } else {
          for (int64_t i = 0; i < count; ++i) out.mutable_data()[i] = daemon::normal(rng);
        }
        return out;
      },
      py::arg("seed"), py::arg("count"), py::arg("fill") = false,
      "`count` N(0, 1) draws from one SampleRng: normal() each, or fill_normal() at once");
  m.def(
      "gamma_draws",
      [](double shape, uint64_t seed, int64_t count) {
        return draws(seed, count, [shape](daemon::SampleRng& rng) { return daemon::gamma_draw(rng, shape); });
      },
      py::arg("shape"), py::arg("seed"), py::arg("count"));
  m.def(
      "beta_draws",
      [](double a, double b, uint64_t seed, int64_t count) {
        return draws(seed, count, [a, b](daemon::SampleRng& rng) { return daemon::beta_draw(rng, a, b); });
      },
      py::arg("a"), py::arg("b"), py::arg("seed"), py::arg("count"));
}

}  // namespace batchd::testing
