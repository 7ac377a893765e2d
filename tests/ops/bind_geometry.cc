// Geometry ops (transforms/kernels/geometry/*.h) and their random draws, for tests/ops/test_geometry.py.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "ops_testing.h"
#include "transforms/kernels/geometry/crop.h"
#include "transforms/kernels/geometry/pad.h"
#include "transforms/kernels/geometry/random_crop.h"
#include "transforms/kernels/geometry/resize.h"

namespace batchd::testing {

namespace {

using namespace daemon::geometry;  // NOLINT
using daemon::ResampleFilter;
using I32Array = py::array_t<int32_t>;

ResampleFilter filter_of(const std::string& name) {
  ResampleFilter f;
  if (!parse_filter(name, &f)) throw std::invalid_argument("unknown interpolation '" + name + "'");
  return f;
}

PadMode mode_of(const std::string& name) {
  PadMode m;
  if (!parse_pad_mode(name, &m)) throw std::invalid_argument("unknown padding_mode '" + name + "'");
  return m;
}

RandomCropParams crop_params(const std::vector<int>& size, const std::optional<std::vector<int>>& padding,
                             bool pad_if_needed, const std::vector<double>& fill, const std::string& mode) {
  RandomCropParams p;
  p.height = size[0];
  p.width = size.size() > 1 ? size[1] : size[0];
  if (padding) p.padding = padding_from(*padding);
  p.pad_if_needed = pad_if_needed;
  p.fill = fill_from(fill);
  p.mode = mode_of(mode);
  return p;
}

// n rows of (top, left, height, width).
I32Array boxes(const std::vector<daemon::CropBox>& b) {
  I32Array out({static_cast<py::ssize_t>(b.size()), py::ssize_t{4}});
  auto v = out.mutable_unchecked<2>();
  for (size_t i = 0; i < b.size(); ++i) {
    v(i, 0) = b[i].top, v(i, 1) = b[i].left, v(i, 2) = b[i].height, v(i, 3) = b[i].width;
  }
  return out;
}

}  // namespace

void bind_geometry(py::module_& m) {
  m.def(
      "pil_resize",
      [](const U8Array& a, int width, int height, const std::string& filter, std::optional<std::vector<float>> box) {
        const daemon::RgbImage src = to_image(a);
        daemon::RgbImage out;
        std::vector<uint8_t> scratch;
        if (box) resize_box(src, box->data(), width, height, filter_of(filter), &out, &scratch);
        else resize_image(src, width, height, filter_of(filter), &out, &scratch);
        return from_image(out);
      },
      py::arg("image"), py::arg("width"), py::arg("height"), py::arg("filter"), py::arg("box") = py::none(),
      "PIL's image.resize((width, height), filter, box) of a uint8 [H, W, 3] array");
  m.def(
      "resize",
      [](const U8Array& a, const std::vector<int>& size, const std::string& interpolation, int max_size) {
        daemon::RgbImage out;
        std::vector<uint8_t> scratch;
        resize(to_image(a), size, max_size, filter_of(interpolation), &out, &scratch);
        return from_image(out);
      },
      py::arg("image"), py::arg("size"), py::arg("interpolation") = "bilinear", py::arg("max_size") = 0,
      "torchvision F.resize(img, size, interpolation, max_size) (max_size 0 = None)");
  m.def(
      "resized_output_size",
      [](int width, int height, const std::vector<int>& size, int max_size) {
        const Size2 s = resized_output_size(width, height, size, max_size);
        return std::vector<int>{s.height, s.width};
      },
      py::arg("width"), py::arg("height"), py::arg("size"), py::arg("max_size") = 0,
      "torchvision's _compute_resized_output_size: [new_h, new_w]");
  m.def(
      "resized_crop",
      [](const U8Array& a, int top, int left, int height, int width, const std::vector<int>& size,
         const std::string& interpolation) {
        daemon::RgbImage out;
        std::vector<uint8_t> scratch;
        resized_crop(to_image(a), {left, top, width, height}, size[1], size[0], filter_of(interpolation), &out,
                     &scratch);
        return from_image(out);
      },
      py::arg("image"), py::arg("top"), py::arg("left"), py::arg("height"), py::arg("width"), py::arg("size"),
      py::arg("interpolation") = "bilinear", "torchvision F.resized_crop(img, top, left, height, width, size, ...)");
  m.def(
      "crop",
      [](const U8Array& a, int top, int left, int height, int width) {
        daemon::RgbImage out;
        crop_image(to_image(a), {left, top, width, height}, &out);
        return from_image(out);
      },
      py::arg("image"), py::arg("top"), py::arg("left"), py::arg("height"), py::arg("width"),
      "torchvision F.crop (PIL's crop: outside the image is 0)");
  m.def(
      "center_crop",
      [](const U8Array& a, const std::vector<int>& size) {
        daemon::RgbImage out;
        center_crop(to_image(a), size.size() > 1 ? size[1] : size[0], size[0], &out);
        return from_image(out);
      },
      py::arg("image"), py::arg("size"), "torchvision F.center_crop(img, [h, w])");
  m.def(
      "pad",
      [](const U8Array& a, const std::vector<int>& padding, const std::vector<double>& fill, const std::string& mode) {
        daemon::RgbImage out;
        pad_image(to_image(a), padding_from(padding), mode_of(mode), fill_from(fill), &out);
        return from_image(out);
      },
      py::arg("image"), py::arg("padding"), py::arg("fill") = std::vector<double>{0.0},
      py::arg("padding_mode") = "constant", "torchvision F.pad(img, padding, fill, padding_mode)");
  m.def(
      "vflip",
      [](const U8Array& a) {
        daemon::RgbImage image = to_image(a);
        flip_vertical(&image);
        return from_image(image);
      },
      py::arg("image"), "torchvision F.vflip");
  m.def(
      "random_crop",
      [](const U8Array& a, const std::vector<int>& size, std::optional<std::vector<int>> padding, bool pad_if_needed,
         const std::vector<double>& fill, const std::string& mode, uint64_t seed, int64_t index) {
        daemon::SampleRng rng(seed, 0, index);
        daemon::RgbImage out;
        const Status s = random_crop(to_image(a), crop_params(size, padding, pad_if_needed, fill, mode), rng, &out);
        if (!s.ok()) throw std::invalid_argument(s.error().message());
        return from_image(out);
      },
      py::arg("image"), py::arg("size"), py::arg("padding") = py::none(), py::arg("pad_if_needed") = false,
      py::arg("fill") = std::vector<double>{0.0}, py::arg("padding_mode") = "constant", py::arg("seed") = 0,
      py::arg("index") = 0, "RandomCrop(...)(img) with the sample rng of (seed, epoch 0, index)");
  m.def(
      "random_crop_params",
      [](int width, int height, int n, uint64_t seed, const std::vector<int>& size,
         std::optional<std::vector<int>> padding, bool pad_if_needed) {
        const RandomCropParams p = crop_params(size, padding, pad_if_needed, {0.0}, "constant");
        const PaddedSize padded = random_crop_padded_size(width, height, p);
        std::vector<daemon::CropBox> out;
        for (int i = 0; i < n; ++i) {
          daemon::SampleRng rng(seed, 0, i);
          const Result<daemon::CropBox> box = random_crop_window(padded, p, rng);
          if (!box.ok()) throw std::invalid_argument(box.error().message());
          out.push_back(*box);
        }
        return boxes(out);
      },
      py::arg("width"), py::arg("height"), py::arg("n"), py::arg("seed"), py::arg("size"),
      py::arg("padding") = py::none(), py::arg("pad_if_needed") = false,
      "n draws of RandomCrop's window (top, left, h, w) in the padded image, one per sample index 0..n-1");
  m.def(
      "random_resized_crop_params",
      [](int width, int height, int n, uint64_t seed, const std::vector<double>& scale,
         const std::vector<double>& ratio) {
        std::vector<daemon::CropBox> out;
        for (int i = 0; i < n; ++i) {
          daemon::SampleRng rng(seed, 0, i);
          out.push_back(daemon::random_resized_crop_params(width, height, rng, scale[0], scale[1], ratio[0], ratio[1]));
        }
        return boxes(out);
      },
      py::arg("width"), py::arg("height"), py::arg("n"), py::arg("seed"), py::arg("scale") = std::vector<double>{0.08, 1.0},
      py::arg("ratio") = std::vector<double>{3.0 / 4.0, 4.0 / 3.0},
      "n draws of RandomResizedCrop.get_params (top, left, h, w), one per sample index 0..n-1");
  m.def(
      "random_resized_crop",
      [](const U8Array& a, const std::vector<int>& size, const std::vector<double>& scale,
         const std::vector<double>& ratio, const std::string& interpolation, uint64_t seed, int64_t index) {
        daemon::SampleRng rng(seed, 0, index);
        daemon::RgbImage out;
        std::vector<uint8_t> scratch;
        random_resized_crop(to_image(a), size[1], size[0], scale.data(), ratio.data(), filter_of(interpolation), rng,
                            &out, &scratch);
        return from_image(out);
      },
      py::arg("image"), py::arg("size"), py::arg("scale") = std::vector<double>{0.08, 1.0},
      py::arg("ratio") = std::vector<double>{3.0 / 4.0, 4.0 / 3.0}, py::arg("interpolation") = "bilinear",
      py::arg("seed") = 0, py::arg("index") = 0,
      "RandomResizedCrop(size, scale, ratio, interpolation)(img) with the sample rng of (seed, epoch 0, index)");
}

}  // namespace batchd::testing
