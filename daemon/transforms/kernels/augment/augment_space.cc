// The auto-augment op spaces and draws (torchvision 0.14 autoaugment.py); see augment_space.h.
#include "transforms/kernels/augment/augment_space.h"

#include <cmath>

namespace batchd::daemon::augment {

namespace {

using Op = AugmentOp;

// The _augmentation_space dicts' key order (the op index drawn picks from it).
constexpr AugmentOp kWideOps[kSpaceOpCount] = {
    Op::kIdentity,   Op::kShearX, Op::kShearY,    Op::kTranslateX, Op::kTranslateY,   Op::kRotate,   Op::kBrightness,
    Op::kColor,      Op::kContrast, Op::kSharpness, Op::kPosterize, Op::kSolarize, Op::kAutoContrast, Op::kEqualize};
constexpr AugmentOp kAutoOps[kSpaceOpCount] = {
    Op::kShearX,    Op::kShearY,    Op::kTranslateX, Op::kTranslateY, Op::kRotate,       Op::kBrightness, Op::kColor,
    Op::kContrast,  Op::kSharpness, Op::kPosterize,  Op::kSolarize,   Op::kAutoContrast, Op::kEqualize,   Op::kInvert};

// torch.rand's float32 draw: 24 random bits times 2^-24.
float torch_rand(SampleRng& rng) { return static_cast<float>(rng.next() >> 40) * 0x1.0p-24f; }

}  // namespace

std::string_view augment_op_name(AugmentOp op) {
  static constexpr std::string_view kNames[kAugmentOpCount] = {
      "Identity",  "ShearX",    "ShearY",   "TranslateX", "TranslateY",   "Rotate",   "Brightness", "Color",
      "Contrast",  "Sharpness", "Posterize", "Solarize",  "AutoContrast", "Equalize", "Invert"};
  return kNames[static_cast<int>(op)];
}

float torch_linspace(float start, float end, int64_t steps, int64_t i) {
  // torch 2.15's CPU kernel (AVX2 and AVX512 alike): every element as its scalar path, one fused multiply-add.
  const float step = (end - start) / static_cast<float>(steps - 1);
  return i < steps / 2 ? std::fma(step, static_cast<float>(i), start)
                       : std::fma(-step, static_cast<float>(steps - i - 1), end);
}

const AugmentOp* space_ops(AugmentSpace space) {
  return space == AugmentSpace::kAutoAugment ? kAutoOps : kWideOps;
}

bool op_signed(AugmentOp op) {
  switch (op) {
    case Op::kShearX: case Op::kShearY: case Op::kTranslateX: case Op::kTranslateY: case Op::kRotate:
    case Op::kBrightness: case Op::kColor: case Op::kContrast: case Op::kSharpness:
      return true;
    default:
      return false;
  }
}

bool op_has_magnitudes(AugmentOp op) {
  return !(op == Op::kIdentity || op == Op::kAutoContrast || op == Op::kEqualize || op == Op::kInvert);
}

double op_magnitude(AugmentSpace space, AugmentOp op, int bin, int num_bins, int height, int width) {
  const bool wide = space == AugmentSpace::kTrivialAugmentWide;
  auto linspace = [&](double start, double end) {
    return static_cast<double>(torch_linspace(static_cast<float>(start), static_cast<float>(end), num_bins, bin));
  };
  switch (op) {
    case Op::kShearX: case Op::kShearY:
      return linspace(0.0, wide ? 0.99 : 0.3);
    case Op::kTranslateX:
      return linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * width);
    case Op::kTranslateY:
      return linspace(0.0, wide ? 32.0 : 150.0 / 331.0 * height);
    case Op::kRotate:
      return linspace(0.0, wide ? 135.0 : 30.0);
    case Op::kBrightness: case Op::kColor: case Op::kContrast: case Op::kSharpness:
      return linspace(0.0, wide ? 0.99 : 0.9);
    case Op::kPosterize: {
      // 8 - (torch.arange(n) / ((n - 1) / q)).round().int(): a float32 division, round half to even.
      const float divisor = static_cast<float>((num_bins - 1) / (wide ? 6.0 : 4.0));
      return 8.0 - std::nearbyint(static_cast<float>(bin) / divisor);
    }
    case Op::kSolarize:
      return linspace(255.0, 0.0);
    default:
      return 0.0;
  }
}

AugmentStep draw_trivial_augment_wide(SampleRng& rng, int num_bins, int height, int width, int* bin) {
  const AugmentSpace space = AugmentSpace::kTrivialAugmentWide;
  AugmentStep step;
  step.op = kWideOps[rng.randint(0, kSpaceOpCount - 1)];
  int drawn = -1;
  if (op_has_magnitudes(step.op)) {
    drawn = static_cast<int>(rng.randint(0, num_bins - 1));
    step.magnitude = op_magnitude(space, step.op, drawn, num_bins, height, width);
  }
  if (op_signed(step.op) && rng.randint(0, 1) == 1) step.magnitude = -step.magnitude;
  if (bin != nullptr) *bin = drawn;
  return step;
}

AugmentStep draw_rand_augment(SampleRng& rng, int magnitude_bin, int num_bins, int height, int width) {
  const AugmentSpace space = AugmentSpace::kRandAugment;
  AugmentStep step;
  step.op = kWideOps[rng.randint(0, kSpaceOpCount - 1)];
  if (op_has_magnitudes(step.op)) step.magnitude = op_magnitude(space, step.op, magnitude_bin, num_bins, height, width);
  if (op_signed(step.op) && rng.randint(0, 1) == 1) step.magnitude = -step.magnitude;
  return step;
}

int draw_auto_augment(SampleRng& rng, AutoAugmentPolicy policy, int height, int width, AugmentStep steps[2],
                      int* policy_id) {
  // AutoAugment.get_params: torch.randint(25), torch.rand(2), torch.randint(2, (2,)).
  const int id = static_cast<int>(rng.randint(0, kPolicyCount - 1));
  const float probs[2] = {torch_rand(rng), torch_rand(rng)};
  const int64_t signs[2] = {rng.randint(0, 1), rng.randint(0, 1)};
  if (policy_id != nullptr) *policy_id = id;
  int count = 0;
  for (int i = 0; i < 2; ++i) {
    const PolicyOp& entry = policy_table(policy)[id][i];
    if (!(probs[i] <= static_cast<float>(entry.probability))) continue;
    AugmentStep step{entry.op, 0.0};
    if (entry.bin >= 0) step.magnitude = op_magnitude(AugmentSpace::kAutoAugment, entry.op, entry.bin, 10, height, width);
    if (op_signed(entry.op) && signs[i] == 0) step.magnitude = -step.magnitude;
    steps[count++] = step;
  }
  return count;
}

}  // namespace batchd::daemon::augment
