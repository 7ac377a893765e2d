// Pillow-compatible resampling (transforms/kernels/resample.h).
#include "ops_testing.h"

namespace batchd::testing {

void bind_resample(py::module_& m) {
  m.def(
      "resize_bilinear",
      [](const U8Array& src, int width, int height) {
        const daemon::RgbImage image = to_image(src);
        const daemon::ResampleAxis x{image.width, 0.0, static_cast<double>(image.width), width, 0, width};
        const daemon::ResampleAxis y{image.height, 0.0, static_cast<double>(image.height), height, 0, height};
        daemon::RgbImage out;
        out.width = width;
        out.height = height;
        out.pixels.resize(static_cast<size_t>(width) * height * 3);
        std::vector<uint8_t> scratch;
        daemon::resample_bilinear(image, 0, 0, x, y, out.pixels.data(), &scratch);
        return from_image(out);
      },
      py::arg("image"), py::arg("width"), py::arg("height"),
      "PIL's image.resize((width, height), Image.BILINEAR) of a uint8 [H, W, 3] array");
}

}  // namespace batchd::testing
