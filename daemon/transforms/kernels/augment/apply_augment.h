// apply_augment.h — torchvision 0.14's auto-augment transforms on a PIL-like 8-bit RGB image: _apply_op (one op at a
// given magnitude) and the forward() of TrivialAugmentWide, RandAugment and AutoAugment (draws from
// augment_space.h, pixels from pil_affine.h and color/color.h), with the same output bytes as torchvision on a PIL
// image given the same draws.
//
// _apply_op (autoaugment.py), magnitude m:
//   ShearX / ShearY  F.affine(angle 0, translate [0, 0], scale 1, shear [degrees(atan(m)), 0] / [0, ...],
//                    center [0, 0]) -> Image.transform with the inverse matrix;
//   TranslateX / Y   F.affine(translate [int(m), 0] / [0, int(m)], center: the image's centre (w * 0.5, h * 0.5));
//   Rotate           F.rotate(m) -> Image.rotate(m) about the centre, same size;
//   Brightness, Color (saturation), Contrast, Sharpness: ImageEnhance with factor 1 + m;
//   Posterize int(m) bits; Solarize threshold m; AutoContrast; Equalize; Invert; Identity.
// Geometric ops use `filter` (the transform's interpolation: nearest by default, bilinear, bicubic) and `fill` (the
// transform's fill through functional_pil._parse_fill: None -> 0, a number for all bands, int() of each).
// The image keeps its size. Not thread-safe (scratch); allocates nothing once the scratch buffers have grown.
#pragma once

#include "transforms/kernels/augment/augment_space.h"
#include "transforms/kernels/augment/pil_affine.h"

namespace batchd::daemon::augment {

// Buffers reused from sample to sample.
struct AugmentScratch {
  RgbImage warped;     // a geometric op's output, swapped with the image
  RgbImage smoothed;   // Sharpness's SMOOTH-filtered image
};

// autoaugment._apply_op(img, name, magnitude, interpolation, fill).
void apply_augment_op(RgbImage& image, const AugmentStep& step, PilFilter filter, FillColor fill,
                      AugmentScratch* scratch);

// One of the three transforms, as constructed (the op's canonical parameters).
struct AugmentTransform {
  AugmentSpace space = AugmentSpace::kTrivialAugmentWide;
  int num_magnitude_bins = 31;  // TrivialAugmentWide, RandAugment; 2..kMaxMagnitudeBins
  int magnitude = 9;            // RandAugment: the bin, 0..num_magnitude_bins - 1
  int num_ops = 2;              // RandAugment
  AutoAugmentPolicy policy = AutoAugmentPolicy::kImagenet;
  PilFilter filter = PilFilter::kNearest;
  FillColor fill;
};

// The transform's forward(img): its draws from `rng` (augment_space.h, torchvision's order), then the ops.
void run_augment(const AugmentTransform& transform, RgbImage& image, SampleRng& rng, AugmentScratch* scratch);

}  // namespace batchd::daemon::augment
