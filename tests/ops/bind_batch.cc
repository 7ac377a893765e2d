// The batch ops (transforms/kernels/tensor/mixup.h) on numpy batches: images [B, C, H, W] (or [B, H, W, C] with hwc) as
// float32, or as the uint16 bits of float16 / bfloat16 (dtype names it), labels [B, K] float32.
#include <pybind11/stl.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "ops_testing.h"
#include "transforms/kernels/tensor/mixup.h"

namespace batchd::testing {

namespace {

using Labels = py::array_t<float, py::array::c_style | py::array::forcecast>;

// A writable copy of `images` and `labels`, and the BatchView over the copies.
struct BatchCopy {
  py::array images;
  Labels labels;
  daemon::ops::BatchView view;
};

BatchCopy copy_batch(const py::array& images, const std::string& dtype, const Labels& labels, bool hwc) {
  BatchCopy b;
  daemon::ops::BatchView& v = b.view;
  if (dtype == "float32") {
    b.images = py::array_t<float, py::array::c_style | py::array::forcecast>(images).attr("copy")();
    v.image_dtype = wire::FLOAT32;
  } else if (dtype == "float16" || dtype == "bfloat16") {
    b.images = py::array_t<uint16_t, py::array::c_style | py::array::forcecast>(images).attr("copy")();
    v.image_dtype = dtype == "float16" ? wire::FLOAT16 : wire::BFLOAT16;
  } else if (dtype == "uint8") {  // for the kernels' refusal
    b.images = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>(images).attr("copy")();
    v.image_dtype = wire::UINT8;
  } else {
    throw std::invalid_argument("dtype must be float32, float16, bfloat16 or uint8");
  }
  if (b.images.ndim() != 4) throw std::invalid_argument("images must be [B, C, H, W] (or [B, H, W, C] with hwc)");
  b.labels = labels.attr("copy")();
  if (b.labels.ndim() != 2 || b.labels.shape(0) != b.images.shape(0)) {
    throw std::invalid_argument("labels must be [B, num_classes]");
  }
  v.samples = static_cast<uint32_t>(b.images.shape(0));
  v.images = b.images.mutable_data();
  v.hwc = hwc;
  v.channels = static_cast<int>(b.images.shape(hwc ? 3 : 1));
  v.height = static_cast<int>(b.images.shape(hwc ? 1 : 2));
  v.width = static_cast<int>(b.images.shape(hwc ? 2 : 3));
  v.image_sample_values = static_cast<uint64_t>(v.channels) * v.height * v.width;
  v.labels = b.labels.mutable_data();
  v.num_classes = b.labels.shape(1);
  return b;
}

}  // namespace

void bind_batch(py::module_& m) {
  m.def(
      "mixup",
      [](const py::array& images, const std::string& dtype, const Labels& labels, double lam, bool hwc) {
        BatchCopy b = copy_batch(images, dtype, labels, hwc);
        std::vector<std::byte> scratch;
        std::vector<float> label_scratch;
        daemon::mixup_images(b.view, lam, &scratch);
        daemon::mix_labels(b.view, lam, &label_scratch);
        return py::make_tuple(b.images, b.labels);
      },
      py::arg("images"), py::arg("dtype"), py::arg("labels"), py::arg("lam"), py::arg("hwc") = false,
      "RandomMixup's mixing with lambda fixed: (images, labels)");
  m.def(
      "cutmix_box",
      [](int width, int height, double lam, int r_x, int r_y) {
        const auto box = daemon::cutmix_box(width, height, lam, r_x, r_y);
        return py::make_tuple(box.x1, box.y1, box.x2, box.y2, box.lambda);
      },
      py::arg("width"), py::arg("height"), py::arg("lam"), py::arg("r_x"), py::arg("r_y"),
      "RandomCutmix's box for lambda and centre: (x1, y1, x2, y2, corrected lambda)");
  m.def(
      "cutmix",
      [](const py::array& images, const std::string& dtype, const Labels& labels, double lam, int r_x, int r_y,
         bool hwc) {
        BatchCopy b = copy_batch(images, dtype, labels, hwc);
        const auto box = daemon::cutmix_box(b.view.width, b.view.height, lam, r_x, r_y);
        std::vector<std::byte> scratch;
        std::vector<float> label_scratch;
        daemon::cutmix_images(b.view, box, &scratch);
        daemon::mix_labels(b.view, box.lambda, &label_scratch);
        return py::make_tuple(b.images, b.labels);
      },
      py::arg("images"), py::arg("dtype"), py::arg("labels"), py::arg("lam"), py::arg("r_x"), py::arg("r_y"),
      py::arg("hwc") = false, "RandomCutmix's mixing with lambda and the centre fixed: (images, labels)");
  m.def(
      "batch_kernel",
      [](const std::string& op, const py::array& images, const std::string& dtype, const Labels& labels,
         double alpha, double p, uint64_t seed, uint64_t epoch, int64_t batch, bool hwc) {
        BatchCopy b = copy_batch(images, dtype, labels, hwc);
        const daemon::MixParams params{alpha, p};
        if (op != "mixup" && op != "cutmix") throw std::invalid_argument("op must be mixup or cutmix");
        daemon::MixKernel kernel(op == "mixup" ? daemon::MixKernel::Mode::kMixup : daemon::MixKernel::Mode::kCutmix,
                                 params);
        daemon::SampleRng rng(seed, epoch, batch);
        const Status st = kernel.run(b.view, rng);
        if (!st.ok()) throw std::runtime_error(st.error().message());
        return py::make_tuple(b.images, b.labels);
      },
      py::arg("op"), py::arg("images"), py::arg("dtype"), py::arg("labels"), py::arg("alpha"), py::arg("p"),
      py::arg("seed"), py::arg("epoch"), py::arg("batch"), py::arg("hwc") = false,
      "the MixKernel (mixup or cutmix) run on batch (seed, epoch, batch): (images, labels)");
}

}  // namespace batchd::testing
