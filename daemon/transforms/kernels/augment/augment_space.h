// augment_space.h — the op spaces of torchvision 0.14's auto-augment family (transforms/autoaugment.py) and their
// per-sample draws: which ops a sample gets and with what magnitude, exactly as TrivialAugmentWide, RandAugment and
// AutoAugment choose them, with the sample's SampleRng in place of torch's generator.
//
// Magnitudes are the values of the classes' _augmentation_space tables: float32 tensors from torch.linspace (the
// value _apply_op gets is that float32 widened to double), posterize bits 8 - round(arange(n) / ((n - 1) / q)).
// torch 2.15's CPU linspace is reproduced bit for bit (torch_linspace): its AVX2 and AVX512 kernels (the capabilities
// torch picks on x86-64) compute every element as start + step * i (i < steps / 2) or end - step * (steps - i - 1),
// each with one fused multiply-add (torch 1.13's AVX2 kernel computed the leading multiple of 16 elements as vector
// lanes base + k * step instead, which differs in the last bit). This file is compiled with -ffp-contract=off.
//
// Draws, in torchvision's order (each torch.randint(n) is rng.randint(0, n - 1), each torch.rand a
// rng.uniform(0, 1) compared in float32 as torch compares its float32 draw):
//   TrivialAugmentWide: op index (14 ops), then the magnitude bin if the op has magnitudes, then the sign if the op
//     is signed (negative when the draw is 1);
//   RandAugment: num_ops times: op index (14 ops), then the sign if signed (negative when 1); the magnitude is the
//     fixed bin `magnitude`;
//   AutoAugment: the sub-policy (25), two probabilities, two signs (all four drawn always); op i of the sub-policy
//     runs when prob_i <= p_i, negated when signed and sign_i == 0.
// Thread-safe: the tables are constants.
#pragma once

#include <cstdint>
#include <string_view>

#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon::augment {

// _apply_op's op names.
enum class AugmentOp : uint8_t {
  kIdentity, kShearX, kShearY, kTranslateX, kTranslateY, kRotate, kBrightness, kColor, kContrast, kSharpness,
  kPosterize, kSolarize, kAutoContrast, kEqualize, kInvert,
};
constexpr int kAugmentOpCount = 15;
std::string_view augment_op_name(AugmentOp op);  // "ShearX"; the names torchvision's _apply_op takes

// One op to apply: _apply_op(img, name, magnitude, ...) with this magnitude.
struct AugmentStep {
  AugmentOp op = AugmentOp::kIdentity;
  double magnitude = 0.0;
};

// Element i of torch.linspace(start, end, steps) as torch 2.15 computes it in float32 on x86-64 (see above).
// 0 <= i < steps, 2 <= steps <= kMaxMagnitudeBins.
float torch_linspace(float start, float end, int64_t steps, int64_t i);

// num_magnitude_bins is at most this (torch's linspace runs in one thread below its grain size of 32768, and the
// tables stay small): the schema's bound.
constexpr int kMaxMagnitudeBins = 1024;

enum class AugmentSpace { kTrivialAugmentWide, kRandAugment, kAutoAugment };

// The op list of a space's table, in its order (op index -> op): 14 ops each; AutoAugment's has Invert and no
// Identity (its policies name ops, the index is never drawn).
const AugmentOp* space_ops(AugmentSpace space);
constexpr int kSpaceOpCount = 14;

// Whether `op` is signed (the same in every space), whether it has a magnitude table (a 1-d tensor; AutoContrast, Equalize,
// Invert and Identity have none), and table element `bin` of `num_bins` for an image height x width.
bool op_signed(AugmentOp op);
bool op_has_magnitudes(AugmentOp op);
double op_magnitude(AugmentSpace space, AugmentOp op, int bin, int num_bins, int height, int width);

// TrivialAugmentWide.forward's draws: one step. `bin` (optional) receives the drawn magnitude bin, -1 when none.
AugmentStep draw_trivial_augment_wide(SampleRng& rng, int num_bins, int height, int width, int* bin = nullptr);

// RandAugment.forward's draws for one of its num_ops ops (call num_ops times).
AugmentStep draw_rand_augment(SampleRng& rng, int magnitude_bin, int num_bins, int height, int width);

// AutoAugment policies (AutoAugmentPolicy): IMAGENET, CIFAR10, SVHN: 25 sub-policies of two (op, p, bin) each.
enum class AutoAugmentPolicy { kImagenet, kCifar10, kSvhn };
struct PolicyOp {
  AugmentOp op;
  double probability;
  int bin;  // -1: None (the op takes magnitude 0)
};
constexpr int kPolicyCount = 25;
const PolicyOp (*policy_table(AutoAugmentPolicy policy))[2];

// AutoAugment.forward's draws: writes the 0, 1 or 2 steps that run into `steps`, returns how many. `policy_id`
// (optional) receives the drawn sub-policy.
int draw_auto_augment(SampleRng& rng, AutoAugmentPolicy policy, int height, int width, AugmentStep steps[2],
                      int* policy_id = nullptr);

}  // namespace batchd::daemon::augment
