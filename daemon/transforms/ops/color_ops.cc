// The color ops (op_registry.h add_color_ops): color_jitter, random_grayscale, gaussian_blur — torchvision 0.14's
// ColorJitter, RandomGrayscale and GaussianBlur on PIL images, with their parameter checks (transforms.py
// ColorJitter._check_input, GaussianBlur.__init__), their draws (transforms/kernels/color/color_draws.h) and Pillow's
// pixels (transforms/kernels/color/color.h). All three take and give an image (Kind::kImage) of unchanged size.
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "transforms/kernels/color/color.h"
#include "transforms/kernels/color/color_draws.h"
#include "transforms/ops/op_registry.h"

namespace batchd::daemon::ops {
namespace {

// --- color_jitter ----------------------------------------------------------------------------------------------

ParamDef jitter_param(const char* key, const char* doc) {
  ParamDef p = param_def(key, ParamType::kNumberOrList, doc);
  p.default_value = number_value(0);
  p.min = 0;
  p.min_len = p.max_len = 2;
  return p;
}

// One of ColorJitter's four ranges, checked as _check_input does (a pair must be ordered; the hue number in [0, 0.5]
// and the hue pair in [-0.5, 0.5] (the schema's bounds)), then made [min, max] or None.
Result<FactorRange> jitter_range(const wire::Op& op, const char* key, bool hue) {
  const std::vector<double> v = numbers(op, key);
  const double center = hue ? 0.0 : 1.0;
  if (v.size() == 1) {
    if (v[0] < 0) return param_error(key, "a single number must be non-negative (the range is center -/+ n)");
    return color_jitter_range(v[0], center, !hue);
  }
  if (v[0] > v[1]) return param_error(key, "min is above max");
  return color_jitter_range(std::array<double, 2>{v[0], v[1]}, center);
}

Result<ColorJitterRanges> jitter_ranges(const wire::Op& op) {
  Result<FactorRange> b = jitter_range(op, "brightness", false);
  Result<FactorRange> c = jitter_range(op, "contrast", false);
  Result<FactorRange> s = jitter_range(op, "saturation", false);
  Result<FactorRange> h = jitter_range(op, "hue", true);
  for (const Result<FactorRange>* r : {&b, &c, &s, &h}) {
    if (!r->ok()) return r->error();
  }
  return ColorJitterRanges{*b, *c, *s, *h};
}

// A number n is the range torchvision stores for it ([max(0, 1 - n), 1 + n]; hue [-n, n]); a range [c, c] at the
// center (1; hue 0) is no jitter, as torchvision's None, written 0.
void canonical_ranges(wire::Op& op) {
  for (auto& p : *op.mutable_params()) {
    const bool hue = p.key() == "hue";
    const double center = hue ? 0.0 : 1.0;
    wire::OpValue& v = *p.mutable_value();
    if (v.kind_case() == wire::OpValue::kNumber && v.number() > 0) {
      const double n = v.number();
      v = hue ? numbers_value({-n, n}) : numbers_value({std::max(0.0, 1.0 - n), 1.0 + n});
    } else if (v.kind_case() == wire::OpValue::kNumbers && v.numbers().values_size() == 2 &&
               v.numbers().values(0) == center && v.numbers().values(1) == center) {
      v = number_value(0);
    }
  }
}

OpDef color_jitter() {
  OpDef d;
  d.canonicalize = canonical_ranges;
  d.name = "color_jitter";
  d.follows = "torchvision.transforms.ColorJitter (0.29, v1 and v2)";
  d.random = true;
  d.params = {
      jitter_param("brightness", "n: factor uniform in [max(0, 1 - n), 1 + n]; or [min, max]; 0 = off"),
      jitter_param("contrast", "n: factor uniform in [max(0, 1 - n), 1 + n]; or [min, max]; 0 = off"),
      jitter_param("saturation", "n: factor uniform in [max(0, 1 - n), 1 + n]; or [min, max]; 0 = off"),
      jitter_param("hue", "n in [0, 0.5]: factor uniform in [-n, n]; or [min, max] within [-0.5, 0.5]; 0 = off"),
  };
  d.params.back().min = -0.5;
  d.params.back().max = 0.5;
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    BATCHD_RETURN_IF_ERROR(jitter_ranges(op));
    return need_image(in);
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    Result<ColorJitterRanges> ranges = jitter_ranges(op);
    if (!ranges.ok()) return ranges.error();
    return fn_kernel([ranges = *ranges](Sample& sample, SampleRng& rng) {
      apply_color_jitter(sample.image, draw_color_jitter(ranges, rng));
    });
  };
  return d;
}

// --- random_grayscale ------------------------------------------------------------------------------------------

OpDef random_grayscale() {
  OpDef d;
  d.name = "random_grayscale";
  d.follows = "torchvision.transforms.RandomGrayscale (0.29, v1 and v2)";
  d.random = true;
  ParamDef p = param_def("p", ParamType::kNumber, "probability of making the image grayscale (3 equal channels)");
  p.default_value = number_value(0.1);
  p.min = 0;
  p.max = 1;
  d.params = {p};
  d.plan = [](const wire::Op&, const ValueType& in, const OpPlanContext&) { return need_image(in); };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    return fn_kernel([p = number(op, "p")](Sample& sample, SampleRng& rng) {
      if (draw_random_grayscale(p, rng)) to_grayscale(sample.image);
    });
  };
  return d;
}

// --- gaussian_blur ---------------------------------------------------------------------------------------------

struct BlurParams {
  int kx = 0, ky = 0;
  double sigma_min = 0, sigma_max = 0;
};

// GaussianBlur.__init__'s checks: kernel sizes odd and positive (n or [kx, ky]; [n] as _setup_size takes it),
// sigma > 0 or [min, max] with 0 < min <= max.
Result<BlurParams> blur_params(const wire::Op& op) {
  const std::vector<double> k = numbers(op, "kernel_size");
  for (double v : k) {
    if (v != std::floor(v) || static_cast<int64_t>(v) % 2 == 0) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%.10g", v);
      return param_error("kernel_size", std::string("must be odd positive integers, not ") + shown);
    }
  }
  const std::vector<double> s = numbers(op, "sigma");
  for (double v : s) {
    if (v <= 0) return param_error("sigma", "must be positive (a standard deviation in pixels)");
  }
  if (s.size() == 2 && s[0] > s[1]) return param_error("sigma", "min is above max");
  return BlurParams{static_cast<int>(k.front()), static_cast<int>(k.back()), s.front(), s.back()};
}

// kernel_size n and sigma s are [n, n] and [s, s], as torchvision stores them.
void canonical_pairs(wire::Op& op) {
  for (auto& p : *op.mutable_params()) {
    if (p.value().kind_case() == wire::OpValue::kNumber) {
      const double n = p.value().number();
      *p.mutable_value() = numbers_value({n, n});
    }
  }
}

OpDef gaussian_blur_op() {
  OpDef d;
  d.canonicalize = canonical_pairs;
  d.name = "gaussian_blur";
  d.follows = "torchvision.transforms.GaussianBlur (0.29, v1 and v2)";
  d.random = true;
  ParamDef kernel_size =
      param_def("kernel_size", ParamType::kNumberOrList, "n or [kx, ky]: odd kernel width and height in pixels");
  kernel_size.presence = Presence::kRequired;
  kernel_size.min = 1;
  kernel_size.limit = &OpLimits::max_kernel_size;
  kernel_size.limit_key = "limits.max_kernel_size";
  kernel_size.max_len = 2;
  ParamDef sigma = param_def("sigma", ParamType::kNumberOrList,
                             "s or [min, max]: the Gaussian's standard deviation in pixels, drawn per sample");
  sigma.default_value = numbers_value({0.1, 2.0});
  sigma.min = 0;
  sigma.min_len = sigma.max_len = 2;
  d.params = {kernel_size, sigma};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    BATCHD_RETURN_IF_ERROR(blur_params(op));
    return need_image(in);
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) -> Result<std::unique_ptr<SampleKernel>> {
    Result<BlurParams> params = blur_params(op);
    if (!params.ok()) return params.error();
    return fn_kernel([p = *params, buffers = BlurBuffers()](Sample& sample, SampleRng& rng) mutable {
      const double sigma = draw_gaussian_sigma(p.sigma_min, p.sigma_max, rng);
      gaussian_blur(sample.image, p.kx, p.ky, sigma, sigma, &sample.spare, &buffers);
    });
  };
  return d;
}

}  // namespace

void add_color_ops(std::vector<OpDef>* defs) {
  defs->push_back(color_jitter());
  defs->push_back(random_grayscale());
  defs->push_back(gaussian_blur_op());
}

}  // namespace batchd::daemon::ops
