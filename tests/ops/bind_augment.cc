// The auto-augment family (transforms/kernels/augment/): Pillow's affine warps, the op spaces and the draws.
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "ops_testing.h"
#include "transforms/kernels/augment/apply_augment.h"
#include "transforms/kernels/augment/augment_space.h"
#include "transforms/kernels/augment/pil_affine.h"

namespace batchd::testing {

namespace {

using namespace daemon::augment;

PilFilter filter_of(const std::string& name) {
  if (name == "nearest") return PilFilter::kNearest;
  if (name == "bilinear") return PilFilter::kBilinear;
  if (name == "bicubic") return PilFilter::kBicubic;
  throw std::invalid_argument("interpolation: nearest, bilinear or bicubic, not " + name);
}

FillColor fill_of(const std::vector<int>& rgb) {
  if (rgb.size() != 3) throw std::invalid_argument("fill: [r, g, b]");
  FillColor fill;
  for (int c = 0; c < 3; ++c) fill.rgb[c] = static_cast<uint8_t>(rgb[c]);
  return fill;
}

AugmentSpace space_of(const std::string& name) {
  if (name == "trivial_augment_wide") return AugmentSpace::kTrivialAugmentWide;
  if (name == "rand_augment") return AugmentSpace::kRandAugment;
  if (name == "auto_augment") return AugmentSpace::kAutoAugment;
  throw std::invalid_argument("space: trivial_augment_wide, rand_augment or auto_augment, not " + name);
}

AutoAugmentPolicy policy_of(const std::string& name) {
  if (name == "imagenet") return AutoAugmentPolicy::kImagenet;
  if (name == "cifar10") return AutoAugmentPolicy::kCifar10;
  if (name == "svhn") return AutoAugmentPolicy::kSvhn;
  throw std::invalid_argument("policy: imagenet, cifar10 or svhn, not " + name);
}

AugmentOp op_of(const std::string& name) {
  for (int i = 0; i < kAugmentOpCount; ++i) {
    if (augment_op_name(static_cast<AugmentOp>(i)) == name) return static_cast<AugmentOp>(i);
  }
  throw std::invalid_argument("unknown augment op " + name);
}

// A SampleRng of its own type (another family may bind SampleRng itself), for driving torchvision's own forward().
struct AugmentRng {
  daemon::SampleRng rng;
};

}  // namespace

void bind_augment(py::module_& m) {
  m.def(
      "augment_affine",
      [](const U8Array& src, const std::vector<double>& matrix, const std::string& interpolation,
         const std::vector<int>& fill) {
        if (matrix.size() != 6) throw std::invalid_argument("matrix: 6 coefficients");
        AffineMatrix a;
        for (int i = 0; i < 6; ++i) a[i] = matrix[i];
        daemon::RgbImage out;
        pil_affine(to_image(src), a, filter_of(interpolation), fill_of(fill), &out);
        return from_image(out);
      },
      py::arg("image"), py::arg("matrix"), py::arg("interpolation"), py::arg("fill"),
      "PIL's image.transform(image.size, Image.AFFINE, matrix, resample, fillcolor=tuple(fill))");
  m.def(
      "augment_rotate",
      [](const U8Array& src, double angle, const std::string& interpolation, const std::vector<int>& fill) {
        daemon::RgbImage out;
        pil_rotate(to_image(src), angle, filter_of(interpolation), fill_of(fill), &out);
        return from_image(out);
      },
      py::arg("image"), py::arg("angle"), py::arg("interpolation"), py::arg("fill"),
      "PIL's image.rotate(angle, resample, expand=False, center=None, fillcolor=tuple(fill))");
  m.def(
      "augment_inverse_affine_matrix",
      [](const std::vector<double>& center, double angle, const std::vector<double>& translate, double scale,
         const std::vector<double>& shear) {
        const AffineMatrix a = torchvision_inverse_affine_matrix(center.at(0), center.at(1), angle, translate.at(0),
                                                                 translate.at(1), scale, shear.at(0), shear.at(1));
        return std::vector<double>(a.begin(), a.end());
      },
      py::arg("center"), py::arg("angle"), py::arg("translate"), py::arg("scale"), py::arg("shear"),
      "torchvision.transforms.functional._get_inverse_affine_matrix(center, angle, translate, scale, shear)");
  m.def(
      "augment_linspace",
      [](float start, float end, int64_t steps) {
        py::array_t<float> out(steps);
        for (int64_t i = 0; i < steps; ++i) out.mutable_at(i) = torch_linspace(start, end, steps, i);
        return out;
      },
      py::arg("start"), py::arg("end"), py::arg("steps"), "torch.linspace(start, end, steps) as torch 2.15 on AVX2 / AVX512");
  m.def(
      "augment_magnitude",
      [](const std::string& space, const std::string& op, int bin, int num_bins, int height, int width) {
        return op_magnitude(space_of(space), op_of(op), bin, num_bins, height, width);
      },
      py::arg("space"), py::arg("op"), py::arg("bin"), py::arg("num_bins"), py::arg("height"), py::arg("width"),
      "float(_augmentation_space(num_bins, (height, width))[op][0][bin])");
  m.def("augment_space_ops", [](const std::string& space) {
    std::vector<std::string> names;
    for (int i = 0; i < kSpaceOpCount; ++i) names.emplace_back(augment_op_name(space_ops(space_of(space))[i]));
    return names;
  });
  m.def(
      "augment_draws",
      [](const std::string& space, uint64_t seed, int64_t count, int num_bins, int magnitude, int num_ops,
         const std::string& policy, int height, int width) {
        // Per sample index 0..count-1 (epoch 0): a list of (op, magnitude, bin or policy id) it draws.
        std::vector<std::vector<std::tuple<std::string, double, int>>> out(count);
        for (int64_t index = 0; index < count; ++index) {
          daemon::SampleRng rng(seed, 0, index);
          auto& steps = out[index];
          if (space == "trivial_augment_wide") {
            int bin = -1;
            const AugmentStep s = draw_trivial_augment_wide(rng, num_bins, height, width, &bin);
            steps.emplace_back(std::string(augment_op_name(s.op)), s.magnitude, bin);
          } else if (space == "rand_augment") {
            for (int k = 0; k < num_ops; ++k) {
              const AugmentStep s = draw_rand_augment(rng, magnitude, num_bins, height, width);
              steps.emplace_back(std::string(augment_op_name(s.op)), s.magnitude, magnitude);
            }
          } else {
            AugmentStep s[2];
            int id = -1;
            const int n = draw_auto_augment(rng, policy_of(policy), height, width, s, &id);
            for (int k = 0; k < n; ++k) steps.emplace_back(std::string(augment_op_name(s[k].op)), s[k].magnitude, id);
            if (n == 0) steps.emplace_back("", 0.0, id);  // the sub-policy drawn, no op ran
          }
        }
        return out;
      },
      py::arg("space"), py::arg("seed"), py::arg("count"), py::arg("num_bins") = 31, py::arg("magnitude") = 9,
      py::arg("num_ops") = 2, py::arg("policy") = "imagenet", py::arg("height") = 224, py::arg("width") = 224,
      "the ops each sample index 0..count-1 draws: lists of (op name, magnitude, bin | policy id)");
  m.def(
      "augment_apply_op",
      [](const U8Array& src, const std::string& op, double magnitude, const std::string& interpolation,
         const std::vector<int>& fill) {
        daemon::RgbImage image = to_image(src);
        AugmentScratch scratch;
        apply_augment_op(image, {op_of(op), magnitude}, filter_of(interpolation), fill_of(fill), &scratch);
        return from_image(image);
      },
      py::arg("image"), py::arg("op"), py::arg("magnitude"), py::arg("interpolation") = "nearest",
      py::arg("fill") = std::vector<int>{0, 0, 0},
      "torchvision.transforms.autoaugment._apply_op(image, op, magnitude, interpolation, fill) on a PIL image");
  m.def(
      "augment_run",
      [](const U8Array& src, const std::string& space, uint64_t seed, uint64_t epoch, int64_t index, int num_bins,
         int magnitude, int num_ops, const std::string& policy, const std::string& interpolation,
         const std::vector<int>& fill) {
        daemon::RgbImage image = to_image(src);
        AugmentTransform t;
        t.space = space_of(space);
        t.num_magnitude_bins = num_bins;
        t.magnitude = magnitude;
        t.num_ops = num_ops;
        t.policy = policy_of(policy);
        t.filter = filter_of(interpolation);
        t.fill = fill_of(fill);
        daemon::SampleRng rng(seed, epoch, index);
        AugmentScratch scratch;
        run_augment(t, image, rng, &scratch);
        return from_image(image);
      },
      py::arg("image"), py::arg("space"), py::arg("seed"), py::arg("epoch"), py::arg("index"),
      py::arg("num_bins") = 31, py::arg("magnitude") = 9, py::arg("num_ops") = 2, py::arg("policy") = "imagenet",
      py::arg("interpolation") = "nearest", py::arg("fill") = std::vector<int>{0, 0, 0},
      "the transform's forward() on one image with the sample's rng (seed, epoch, index)");
  py::class_<AugmentRng>(m, "AugmentRng", "a sample's SampleRng(seed, epoch, index), to drive torchvision's forward()")
      .def(py::init([](uint64_t seed, uint64_t epoch, int64_t index) { return AugmentRng{{seed, epoch, index}}; }))
      .def("randint", [](AugmentRng& r, int64_t lo, int64_t hi) { return r.rng.randint(lo, hi); })
      .def("next", [](AugmentRng& r) { return r.rng.next(); });
}

}  // namespace batchd::testing
