// The auto-augment ops (op_registry.h add_augment_ops): trivial_augment_wide, rand_augment, auto_augment —
// torchvision 0.14's TrivialAugmentWide, RandAugment and AutoAugment on PIL images (transforms/kernels/augment/
// apply_augment.h: their draws in torchvision's order from the sample's rng, Pillow's pixels). Each takes and gives
// an image (Kind::kImage) of unchanged size.
#include <memory>
#include <string>
#include <utility>

#include "transforms/kernels/augment/apply_augment.h"
#include "transforms/ops/op_registry.h"

namespace batchd::daemon::ops {
namespace {

using augment::AugmentSpace;
using augment::AugmentTransform;

constexpr int kMaxNumOps = 32;  // rand_augment's num_ops: bounded work per sample

ParamDef integer_param(const char* key, double fallback, double min, double max, const char* doc) {
  ParamDef p = param_def(key, ParamType::kInteger, doc);
  p.default_value = number_value(fallback);
  p.min = min;
  p.max = max;
  return p;
}

// interpolation and fill, as every class of the family takes them.
void add_common_params(std::vector<ParamDef>* params) {
  ParamDef interpolation = param_def("interpolation", ParamType::kText,
                                         "the geometric ops' resampling: nearest (default), bilinear or bicubic");
  interpolation.default_value = text_value("nearest");
  interpolation.choices = {"nearest", "bilinear", "bicubic"};
  ParamDef fill = param_def("fill", ParamType::kNumberOrList,
                                "v or [r, g, b] in 0..255 (int() of each): the area a geometric op uncovers; "
                                "None (absent) = 0");
  fill.presence = Presence::kOptional;
  fill.min = 0;
  fill.max = 255;
  fill.min_len = fill.max_len = 3;
  params->push_back(std::move(interpolation));
  params->push_back(std::move(fill));
}

// The transform an op describes (canonical, checked).
AugmentTransform transform_of(const wire::Op& op, AugmentSpace space) {
  AugmentTransform t;
  t.space = space;
  t.num_magnitude_bins = static_cast<int>(number(op, "num_magnitude_bins", 31));
  t.magnitude = static_cast<int>(number(op, "magnitude", 9));
  t.num_ops = static_cast<int>(number(op, "num_ops", 2));
  const std::string policy = has(op, "policy") ? text(op, "policy") : "imagenet";
  t.policy = policy == "cifar10" ? augment::AutoAugmentPolicy::kCifar10
             : policy == "svhn"  ? augment::AutoAugmentPolicy::kSvhn
                                 : augment::AutoAugmentPolicy::kImagenet;
  const std::string interpolation = text(op, "interpolation");
  t.filter = interpolation == "bilinear"  ? augment::PilFilter::kBilinear
             : interpolation == "bicubic" ? augment::PilFilter::kBicubic
                                          : augment::PilFilter::kNearest;
  if (has(op, "fill")) {  // functional_pil._parse_fill: a number for every band, int() of each
    const std::vector<double> fill = numbers(op, "fill");
    for (int c = 0; c < 3; ++c) t.fill.rgb[c] = static_cast<uint8_t>(fill[fill.size() == 1 ? 0 : c]);
  }
  return t;
}

Result<ValueType> check(const wire::Op& op, const ValueType& in) {
  auto out = need_image(in);
  if (!out.ok()) return out;
  if (has(op, "magnitude") && number(op, "magnitude") >= number(op, "num_magnitude_bins")) {
    const auto bins = static_cast<int64_t>(number(op, "num_magnitude_bins"));
    return param_error("magnitude", std::to_string(static_cast<int64_t>(number(op, "magnitude"))) +
                                        " is not below num_magnitude_bins (" + std::to_string(bins) +
                                        "): the bin index runs from 0 to " + std::to_string(bins - 1));
  }
  return in;
}

OpDef augment_op(const char* name, const char* follows, AugmentSpace space, std::vector<ParamDef> params) {
  OpDef d;
  d.name = name;
  d.follows = follows;
  d.random = true;
  d.params = std::move(params);
  add_common_params(&d.params);
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) { return check(op, in); };
  d.compile = [space](const wire::Op& op, const ValueType&,
                      const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    // scratch grows to the largest image, then is reused
    return fn_kernel([t = transform_of(op, space), scratch = augment::AugmentScratch()](
                         Sample& sample, SampleRng& rng) mutable { augment::run_augment(t, sample.image, rng, &scratch); });
  };
  return d;
}

ParamDef bins_param() {
  return integer_param("num_magnitude_bins", 31, 2, augment::kMaxMagnitudeBins,
                       "how many magnitudes each op's range is divided into (torch.linspace over the range)");
}

}  // namespace

void add_augment_ops(std::vector<OpDef>* defs) {
  defs->push_back(augment_op("trivial_augment_wide", "torchvision.transforms.TrivialAugmentWide (0.29, v1 and v2)",
                             AugmentSpace::kTrivialAugmentWide, {bins_param()}));
  defs->push_back(augment_op(
      "rand_augment", "torchvision.transforms.RandAugment (0.29, v1 and v2)", AugmentSpace::kRandAugment,
      {integer_param("num_ops", 2, 0, kMaxNumOps, "how many ops each sample gets, drawn with replacement"),
       integer_param("magnitude", 9, 0, augment::kMaxMagnitudeBins - 1,
                     "the magnitude bin every op uses, below num_magnitude_bins"),
       bins_param()}));
  ParamDef policy = param_def("policy", ParamType::kText,
                                  "the learned sub-policies: imagenet (default), cifar10 or svhn (AutoAugmentPolicy)");
  policy.default_value = text_value("imagenet");
  policy.choices = {"imagenet", "cifar10", "svhn"};
  defs->push_back(augment_op("auto_augment", "torchvision.transforms.AutoAugment (0.29, v1 and v2)", AugmentSpace::kAutoAugment,
                             {std::move(policy)}));
}

}  // namespace batchd::daemon::ops
