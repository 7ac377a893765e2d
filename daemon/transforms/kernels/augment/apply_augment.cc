// torchvision's _apply_op and the auto-augment forward() passes; see apply_augment.h.
#include "transforms/kernels/augment/apply_augment.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "transforms/kernels/color/color.h"

namespace batchd::daemon::augment {

namespace {

constexpr double kRadToDeg = 180.0 / 3.14159265358979323846;  // CPython's math.degrees: x * (180 / pi)

void warp(RgbImage& image, const AffineMatrix& matrix, PilFilter filter, FillColor fill, AugmentScratch* scratch) {
  pil_affine(image, matrix, filter, fill, &scratch->warped);
  std::swap(image, scratch->warped);
}

}  // namespace

void apply_augment_op(RgbImage& image, const AugmentStep& step, PilFilter filter, FillColor fill,
                      AugmentScratch* scratch) {
  const double m = step.magnitude;
  switch (step.op) {
    case AugmentOp::kIdentity:
      return;
    case AugmentOp::kShearX:
    case AugmentOp::kShearY: {
      const double shear = std::atan(m) * kRadToDeg;
      const bool x = step.op == AugmentOp::kShearX;
      return warp(image, torchvision_inverse_affine_matrix(0, 0, 0.0, 0, 0, 1.0, x ? shear : 0.0, x ? 0.0 : shear),
                  filter, fill, scratch);
    }
    case AugmentOp::kTranslateX:
    case AugmentOp::kTranslateY: {
      const double t = static_cast<double>(static_cast<int64_t>(m));  // int(magnitude): toward zero
      const bool x = step.op == AugmentOp::kTranslateX;
      return warp(image,
                  torchvision_inverse_affine_matrix(image.width * 0.5, image.height * 0.5, 0.0, x ? t : 0, x ? 0 : t,
                                                    1.0, 0.0, 0.0),
                  filter, fill, scratch);
    }
    case AugmentOp::kRotate:
      pil_rotate(image, m, filter, fill, &scratch->warped);
      std::swap(image, scratch->warped);
      return;
    case AugmentOp::kBrightness:
      return adjust_brightness(image, 1.0 + m);
    case AugmentOp::kColor:
      return adjust_saturation(image, 1.0 + m);
    case AugmentOp::kContrast:
      return adjust_contrast(image, 1.0 + m);
    case AugmentOp::kSharpness:
      return adjust_sharpness(image, 1.0 + m, &scratch->smoothed);
    case AugmentOp::kPosterize:
      return posterize(image, static_cast<int>(m));
    case AugmentOp::kSolarize:
      return solarize(image, m);
    case AugmentOp::kAutoContrast:
      return autocontrast(image);
    case AugmentOp::kEqualize:
      return equalize(image);
    case AugmentOp::kInvert:
      return invert(image);
  }
}

void run_augment(const AugmentTransform& t, RgbImage& image, SampleRng& rng, AugmentScratch* scratch) {
  // The tables are the input's (forward() reads F.get_dimensions once); no op changes the size.
  const int height = image.height, width = image.width;
  switch (t.space) {
    case AugmentSpace::kTrivialAugmentWide:
      return apply_augment_op(image, draw_trivial_augment_wide(rng, t.num_magnitude_bins, height, width), t.filter,
                              t.fill, scratch);
    case AugmentSpace::kRandAugment:
      for (int i = 0; i < t.num_ops; ++i) {
        const AugmentStep step = draw_rand_augment(rng, t.magnitude, t.num_magnitude_bins, height, width);
        apply_augment_op(image, step, t.filter, t.fill, scratch);
      }
      return;
    case AugmentSpace::kAutoAugment: {
      AugmentStep steps[2];
      const int n = draw_auto_augment(rng, t.policy, height, width, steps);
      for (int i = 0; i < n; ++i) apply_augment_op(image, steps[i], t.filter, t.fill, scratch);
      return;
    }
  }
}

}  // namespace batchd::daemon::augment
