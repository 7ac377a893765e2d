// The color functions (transforms/kernels/color/color.h) and the draws of ColorJitter, RandomGrayscale and GaussianBlur
// (transforms/kernels/color/color_draws.h), for tests/ops/test_color.py.
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include <pybind11/stl.h>

#include "ops_testing.h"
#include "transforms/kernels/color/color.h"
#include "transforms/kernels/color/color_draws.h"

namespace batchd::testing {
namespace {

using daemon::RgbImage;
using Range = std::optional<std::array<double, 2>>;

// Binds `name` as f(image, *args) -> a new array: the function applied to a copy of `image`.
template <typename... Args>
void bind_image_function(py::module_& m, const char* name, void (*fn)(RgbImage&, Args...), const char* doc) {
  m.def(name, [fn](const U8Array& a, Args... args) {
    RgbImage image = to_image(a);
    fn(image, args...);
    return from_image(image);
  }, doc);
}

daemon::ColorJitterRanges ranges_of(const Range& b, const Range& c, const Range& s, const Range& h) {
  return {b ? daemon::color_jitter_range(*b, 1.0) : std::nullopt,
          c ? daemon::color_jitter_range(*c, 1.0) : std::nullopt,
          s ? daemon::color_jitter_range(*s, 1.0) : std::nullopt,
          h ? daemon::color_jitter_range(*h, 0.0) : std::nullopt};
}

// A draw as (order[4], factors[4] with NaN for None).
py::tuple draw_tuple(const daemon::ColorJitterDraw& d) {
  const auto value = [](const std::optional<double>& f) { return f ? *f : std::nan(""); };
  return py::make_tuple(std::vector<int>(d.order.begin(), d.order.end()),
                        std::vector<double>{value(d.brightness), value(d.contrast), value(d.saturation), value(d.hue)});
}

}  // namespace

void bind_color(py::module_& m) {
  bind_image_function(m, "adjust_brightness", &daemon::adjust_brightness, "ImageEnhance.Brightness(img).enhance(f)");
  bind_image_function(m, "adjust_contrast", &daemon::adjust_contrast, "ImageEnhance.Contrast(img).enhance(f)");
  bind_image_function(m, "adjust_saturation", &daemon::adjust_saturation, "ImageEnhance.Color(img).enhance(f)");
  bind_image_function(m, "adjust_hue", &daemon::adjust_hue, "F.adjust_hue(img, hue_factor) on PIL");
  bind_image_function(m, "to_grayscale", &daemon::to_grayscale, "F.rgb_to_grayscale(img, 3) on PIL");
  bind_image_function(m, "posterize", &daemon::posterize, "ImageOps.posterize(img, bits)");
  bind_image_function(m, "solarize", &daemon::solarize, "ImageOps.solarize(img, threshold)");
  bind_image_function(m, "autocontrast", &daemon::autocontrast, "ImageOps.autocontrast(img)");
  bind_image_function(m, "equalize", &daemon::equalize, "ImageOps.equalize(img)");
  bind_image_function(m, "invert", &daemon::invert, "ImageOps.invert(img)");
  m.def("adjust_sharpness", [](const U8Array& a, double factor) {
    RgbImage image = to_image(a), scratch;
    daemon::adjust_sharpness(image, factor, &scratch);
    return from_image(image);
  }, "ImageEnhance.Sharpness(img).enhance(f)");
  m.def("gaussian_blur", [](const U8Array& a, int kx, int ky, double sx, double sy, bool thread_scratch) {
    RgbImage image = to_image(a);
    RgbImage scratch;
    if (thread_scratch) {
      daemon::gaussian_blur(image, kx, ky, sx, sy, &scratch);
    } else {
      daemon::BlurBuffers buffers;
      daemon::gaussian_blur(image, kx, ky, sx, sy, &scratch, &buffers);
    }
    return from_image(image);
  }, py::arg("image"), py::arg("kx"), py::arg("ky"), py::arg("sx"), py::arg("sy"), py::arg("thread_scratch") = false,
  "F.gaussian_blur(img, [kx, ky], [sx, sy]) on PIL");

  m.def("color_jitter_draws", [](const Range& b, const Range& c, const Range& s, const Range& h, uint64_t seed,
                                 int n) {
    const daemon::ColorJitterRanges ranges = ranges_of(b, c, s, h);
    py::list out;
    for (int i = 0; i < n; ++i) {
      daemon::SampleRng rng(seed, 0, i);
      out.append(draw_tuple(daemon::draw_color_jitter(ranges, rng)));
    }
    return out;
  }, "ColorJitter.get_params for samples 0..n-1 of epoch 0: [(order, [b, c, s, h] with NaN for None)]");
  m.def("color_jitter", [](const U8Array& a, const Range& b, const Range& c, const Range& s, const Range& h,
                           uint64_t seed, int64_t index) {
    daemon::SampleRng rng(seed, 0, index);
    const daemon::ColorJitterDraw draw = daemon::draw_color_jitter(ranges_of(b, c, s, h), rng);
    RgbImage image = to_image(a);
    daemon::apply_color_jitter(image, draw);
    return py::make_tuple(from_image(image), draw_tuple(draw));
  }, "ColorJitter on one sample: (image, (order, factors))");
  m.def("random_grayscale_draws", [](double p, uint64_t seed, int n) {
    std::vector<bool> out;
    for (int i = 0; i < n; ++i) {
      daemon::SampleRng rng(seed, 0, i);
      out.push_back(daemon::draw_random_grayscale(p, rng));
    }
    return out;
  }, "RandomGrayscale's torch.rand(1) < p for samples 0..n-1");
  m.def("gaussian_sigma_draws", [](double lo, double hi, uint64_t seed, int n) {
    std::vector<double> out;
    for (int i = 0; i < n; ++i) {
      daemon::SampleRng rng(seed, 0, i);
      out.push_back(daemon::draw_gaussian_sigma(lo, hi, rng));
    }
    return out;
  }, "GaussianBlur.get_params(lo, hi) for samples 0..n-1");
}

}  // namespace batchd::testing
