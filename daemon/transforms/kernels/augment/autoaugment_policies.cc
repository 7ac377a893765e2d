// The sub-policies of torchvision 0.14's AutoAugment (transforms/autoaugment.py, AutoAugment._get_policies),
// generated from that file: (op, probability, magnitude bin or -1 for None) pairs, in its order.
#include "transforms/kernels/augment/augment_space.h"

namespace batchd::daemon::augment {

namespace {

// AutoAugmentPolicy.IMAGENET
constexpr PolicyOp kImagenetTable[kPolicyCount][2] = {
    {{AugmentOp::kPosterize, 0.4, 8}, {AugmentOp::kRotate, 0.6, 9}},
    {{AugmentOp::kSolarize, 0.6, 5}, {AugmentOp::kAutoContrast, 0.6, -1}},
    {{AugmentOp::kEqualize, 0.8, -1}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kPosterize, 0.6, 7}, {AugmentOp::kPosterize, 0.6, 6}},
    {{AugmentOp::kEqualize, 0.4, -1}, {AugmentOp::kSolarize, 0.2, 4}},
    {{AugmentOp::kEqualize, 0.4, -1}, {AugmentOp::kRotate, 0.8, 8}},
    {{AugmentOp::kSolarize, 0.6, 3}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kPosterize, 0.8, 5}, {AugmentOp::kEqualize, 1.0, -1}},
    {{AugmentOp::kRotate, 0.2, 3}, {AugmentOp::kSolarize, 0.6, 8}},
    {{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kPosterize, 0.4, 6}},
    {{AugmentOp::kRotate, 0.8, 8}, {AugmentOp::kColor, 0.4, 0}},
    {{AugmentOp::kRotate, 0.4, 9}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kEqualize, 0.0, -1}, {AugmentOp::kEqualize, 0.8, -1}},
    {{AugmentOp::kInvert, 0.6, -1}, {AugmentOp::kEqualize, 1.0, -1}},
    {{AugmentOp::kColor, 0.6, 4}, {AugmentOp::kContrast, 1.0, 8}},
    {{AugmentOp::kRotate, 0.8, 8}, {AugmentOp::kColor, 1.0, 2}},
    {{AugmentOp::kColor, 0.8, 8}, {AugmentOp::kSolarize, 0.8, 7}},
    {{AugmentOp::kSharpness, 0.4, 7}, {AugmentOp::kInvert, 0.6, -1}},
    {{AugmentOp::kShearX, 0.6, 5}, {AugmentOp::kEqualize, 1.0, -1}},
    {{AugmentOp::kColor, 0.4, 0}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kEqualize, 0.4, -1}, {AugmentOp::kSolarize, 0.2, 4}},
    {{AugmentOp::kSolarize, 0.6, 5}, {AugmentOp::kAutoContrast, 0.6, -1}},
    {{AugmentOp::kInvert, 0.6, -1}, {AugmentOp::kEqualize, 1.0, -1}},
    {{AugmentOp::kColor, 0.6, 4}, {AugmentOp::kContrast, 1.0, 8}},
    {{AugmentOp::kEqualize, 0.8, -1}, {AugmentOp::kEqualize, 0.6, -1}},
};
// AutoAugmentPolicy.CIFAR10
constexpr PolicyOp kCifar10Table[kPolicyCount][2] = {
    {{AugmentOp::kInvert, 0.1, -1}, {AugmentOp::kContrast, 0.2, 6}},
    {{AugmentOp::kRotate, 0.7, 2}, {AugmentOp::kTranslateX, 0.3, 9}},
    {{AugmentOp::kSharpness, 0.8, 1}, {AugmentOp::kSharpness, 0.9, 3}},
    {{AugmentOp::kShearY, 0.5, 8}, {AugmentOp::kTranslateY, 0.7, 9}},
    {{AugmentOp::kAutoContrast, 0.5, -1}, {AugmentOp::kEqualize, 0.9, -1}},
    {{AugmentOp::kShearY, 0.2, 7}, {AugmentOp::kPosterize, 0.3, 7}},
    {{AugmentOp::kColor, 0.4, 3}, {AugmentOp::kBrightness, 0.6, 7}},
    {{AugmentOp::kSharpness, 0.3, 9}, {AugmentOp::kBrightness, 0.7, 9}},
    {{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kEqualize, 0.5, -1}},
    {{AugmentOp::kContrast, 0.6, 7}, {AugmentOp::kSharpness, 0.6, 5}},
    {{AugmentOp::kColor, 0.7, 7}, {AugmentOp::kTranslateX, 0.5, 8}},
    {{AugmentOp::kEqualize, 0.3, -1}, {AugmentOp::kAutoContrast, 0.4, -1}},
    {{AugmentOp::kTranslateY, 0.4, 3}, {AugmentOp::kSharpness, 0.2, 6}},
    {{AugmentOp::kBrightness, 0.9, 6}, {AugmentOp::kColor, 0.2, 8}},
    {{AugmentOp::kSolarize, 0.5, 2}, {AugmentOp::kInvert, 0.0, -1}},
    {{AugmentOp::kEqualize, 0.2, -1}, {AugmentOp::kAutoContrast, 0.6, -1}},
    {{AugmentOp::kEqualize, 0.2, -1}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kColor, 0.9, 9}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kAutoContrast, 0.8, -1}, {AugmentOp::kSolarize, 0.2, 8}},
    {{AugmentOp::kBrightness, 0.1, 3}, {AugmentOp::kColor, 0.7, 0}},
    {{AugmentOp::kSolarize, 0.4, 5}, {AugmentOp::kAutoContrast, 0.9, -1}},
    {{AugmentOp::kTranslateY, 0.9, 9}, {AugmentOp::kTranslateY, 0.7, 9}},
    {{AugmentOp::kAutoContrast, 0.9, -1}, {AugmentOp::kSolarize, 0.8, 3}},
    {{AugmentOp::kEqualize, 0.8, -1}, {AugmentOp::kInvert, 0.1, -1}},
    {{AugmentOp::kTranslateY, 0.7, 9}, {AugmentOp::kAutoContrast, 0.9, -1}},
};
// AutoAugmentPolicy.SVHN
constexpr PolicyOp kSvhnTable[kPolicyCount][2] = {
    {{AugmentOp::kShearX, 0.9, 4}, {AugmentOp::kInvert, 0.2, -1}},
    {{AugmentOp::kShearY, 0.9, 8}, {AugmentOp::kInvert, 0.7, -1}},
    {{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kSolarize, 0.6, 6}},
    {{AugmentOp::kInvert, 0.9, -1}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kRotate, 0.9, 3}},
    {{AugmentOp::kShearX, 0.9, 4}, {AugmentOp::kAutoContrast, 0.8, -1}},
    {{AugmentOp::kShearY, 0.9, 8}, {AugmentOp::kInvert, 0.4, -1}},
    {{AugmentOp::kShearY, 0.9, 5}, {AugmentOp::kSolarize, 0.2, 6}},
    {{AugmentOp::kInvert, 0.9, -1}, {AugmentOp::kAutoContrast, 0.8, -1}},
    {{AugmentOp::kEqualize, 0.6, -1}, {AugmentOp::kRotate, 0.9, 3}},
    {{AugmentOp::kShearX, 0.9, 4}, {AugmentOp::kSolarize, 0.3, 3}},
    {{AugmentOp::kShearY, 0.8, 8}, {AugmentOp::kInvert, 0.7, -1}},
    {{AugmentOp::kEqualize, 0.9, -1}, {AugmentOp::kTranslateY, 0.6, 6}},
    {{AugmentOp::kInvert, 0.9, -1}, {AugmentOp::kEqualize, 0.6, -1}},
    {{AugmentOp::kContrast, 0.3, 3}, {AugmentOp::kRotate, 0.8, 4}},
    {{AugmentOp::kInvert, 0.8, -1}, {AugmentOp::kTranslateY, 0.0, 2}},
    {{AugmentOp::kShearY, 0.7, 6}, {AugmentOp::kSolarize, 0.4, 8}},
    {{AugmentOp::kInvert, 0.6, -1}, {AugmentOp::kRotate, 0.8, 4}},
    {{AugmentOp::kShearY, 0.3, 7}, {AugmentOp::kTranslateX, 0.9, 3}},
    {{AugmentOp::kShearX, 0.1, 6}, {AugmentOp::kInvert, 0.6, -1}},
    {{AugmentOp::kSolarize, 0.7, 2}, {AugmentOp::kTranslateY, 0.6, 7}},
    {{AugmentOp::kShearY, 0.8, 4}, {AugmentOp::kInvert, 0.8, -1}},
    {{AugmentOp::kShearX, 0.7, 9}, {AugmentOp::kTranslateY, 0.8, 3}},
    {{AugmentOp::kShearY, 0.8, 5}, {AugmentOp::kAutoContrast, 0.7, -1}},
    {{AugmentOp::kShearX, 0.7, 2}, {AugmentOp::kInvert, 0.1, -1}},
};

}  // namespace

const PolicyOp (*policy_table(AutoAugmentPolicy policy))[2] {
  switch (policy) {
    case AutoAugmentPolicy::kImagenet: return kImagenetTable;
    case AutoAugmentPolicy::kCifar10: return kCifar10Table;
    case AutoAugmentPolicy::kSvhn: return kSvhnTable;
  }
  return kImagenetTable;
}

}  // namespace batchd::daemon::augment
