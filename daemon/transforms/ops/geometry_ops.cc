// The geometry family: decode, resize, center_crop, random_crop, random_resized_crop, horizontal_flip,
// vertical_flip, on PIL-style RGB images (image functions: transforms/kernels/geometry/*.h, resample.h). Contracts and
// torchvision sources: docs/operations.md, "Pipelines".
#include <algorithm>
#include <cmath>
#include <cstring>

#include "transforms/kernels/image_decoder.h"
#include "transforms/ops/geometry_kernels.h"
#include "transforms/ops/op_registry.h"

namespace batchd::daemon::ops {

namespace {

ParamDef size_param(std::string doc) {
  ParamDef p{.key = "size", .type = ParamType::kNumberOrList, .presence = Presence::kRequired};
  p.min = 1;
  p.limit = &OpLimits::max_output_side;
  p.limit_key = "limits.max_output_side";
  p.max_len = 2;
  p.doc = std::move(doc);
  return p;
}

ParamDef interpolation_param() {
  return {.key = "interpolation", .type = ParamType::kText, .default_value = text_value("bilinear"),
          .choices = {"nearest", "bilinear", "bicubic"},
          .doc = "PIL's resampling filter (antialiased when downscaling, as PIL does; resample.h)"};
}

ParamDef antialias_param() {
  return {.key = "antialias", .type = ParamType::kFlag, .default_value = flag_value(true),
          .doc = "true only: torchvision (0.14 to 0.29, v1 and v2) resizes PIL images with antialiasing whatever this says"};
}

ParamDef p_param(double fallback) {
  return {.key = "p", .type = ParamType::kNumber, .default_value = number_value(fallback), .min = 0, .max = 1,
          .doc = "probability of applying it"};
}

Status check_antialias(const wire::Op& op) {
  if (flag(op, "antialias")) return ok_status();
  return param_error("antialias", "false is not served: batchd resizes images as PIL does, always antialiased "
                                  "(torchvision ignores antialias=False for PIL images too); leave it true");
}

// [h, w] of a size parameter: a number n is (n, n) for crops.
std::pair<int, int> square_or_pair(const wire::Op& op) {
  const auto v = numbers(op, "size");
  if (v.size() == 2) return {static_cast<int>(v[0]), static_cast<int>(v[1])};
  return {static_cast<int>(v[0]), static_cast<int>(v[0])};
}

OpDef decode_def() {
  OpDef d;
  d.name = "decode";
  d.follows = "torchvision.datasets.folder.pil_loader (Image.open(f).convert(\"RGB\")); max_side is FFCV's "
              "max_resolution, not a torchvision op";
  d.params = {{.key = "exact_decode", .type = ParamType::kFlag, .default_value = flag_value(false),
               .doc = "decode as PIL does (accurate IDCT, fancy upsampling); false: libjpeg-turbo's fast IDCT, "
                      "DCT-domain downscaling and region decode when the ops after allow it"},
              {.key = "max_side", .type = ParamType::kInteger, .default_value = number_value(0), .min = 0,
               .limit = &OpLimits::max_output_side, .limit_key = "limits.max_output_side",
               .doc = "downscale (PIL bilinear) so the longer side is at most this many pixels; 0 = off"}};
  d.plan = [](const wire::Op&, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    if (in.kind != Kind::kEncoded) return Error(ErrorCode::kInvalidArgument, "comes once, first");
    return ValueType{.kind = Kind::kImage};
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) { return make_decode_kernel(op); };
  return d;
}

OpDef resize_def() {
  OpDef d;
  d.name = "resize";
  d.follows = "torchvision.transforms.Resize";
  d.params = {size_param("n: the shorter side becomes n, the longer int(n * long / short); [h, w]: exactly"),
              interpolation_param(),
              {.key = "max_size", .type = ParamType::kInteger, .presence = Presence::kOptional, .min = 1,
               .limit = &OpLimits::max_output_side, .limit_key = "limits.max_output_side",
               .doc = "with an int size: the longer side is at most this (torchvision's max_size)"},
              antialias_param()};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    auto out = need_image(in);
    if (!out.ok()) return out;
    BATCHD_RETURN_IF_ERROR(check_antialias(op));
    const auto size = numbers(op, "size");
    if (size.size() == 2) {
      if (has(op, "max_size")) return param_error("max_size", "applies only when size is one number (torchvision)");
      return ValueType{.kind = Kind::kImage, .height = static_cast<int>(size[0]), .width = static_cast<int>(size[1])};
    }
    if (has(op, "max_size") && number(op, "max_size") <= size[0]) {
      return param_error("max_size", "must be larger than size (torchvision)");
    }
    if (!in.fixed_size()) return ValueType{.kind = Kind::kImage};
    const auto [w, h] = resized_size(in.width, in.height, op);
    return ValueType{.kind = Kind::kImage, .height = h, .width = w};
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) { return make_resize_kernel(op); };
  return d;
}

OpDef center_crop_def() {
  OpDef d;
  d.name = "center_crop";
  d.follows = "torchvision.transforms.CenterCrop";
  d.params = {size_param("n: n x n; [h, w]; a side larger than the image pads it with 0 (as torchvision)")};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    auto out = need_image(in);
    if (!out.ok()) return out;
    const auto [h, w] = square_or_pair(op);
    return ValueType{.kind = Kind::kImage, .height = h, .width = w};
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) { return make_center_crop_kernel(op); };
  return d;
}

OpDef random_crop_def() {
  OpDef d;
  d.name = "random_crop";
  d.follows = "torchvision.transforms.RandomCrop";
  d.random = true;
  ParamDef padding{.key = "padding", .type = ParamType::kNumberOrList, .presence = Presence::kOptional, .min = 0,
                   .limit = &OpLimits::max_padding, .limit_key = "limits.max_padding", .min_len = 1, .max_len = 4,
                   .doc = "pixels added before cropping: n (every side), [left/right, top/bottom] or [l, t, r, b]"};
  ParamDef fill{.key = "fill", .type = ParamType::kNumberOrList, .default_value = number_value(0), .min = 0,
                .max = 255, .min_len = 1, .max_len = 3,
                .doc = "padding_mode constant's value: n or [r, g, b] (truncated to integers, as PIL)"};
  d.params = {size_param("n: n x n; [h, w]"), padding,
              {.key = "pad_if_needed", .type = ParamType::kFlag, .default_value = flag_value(false),
               .doc = "pad a side shorter than the crop by the difference on both ends (as torchvision)"},
              fill,
              {.key = "padding_mode", .type = ParamType::kText, .default_value = text_value("constant"),
               .choices = {"constant", "edge", "reflect", "symmetric"},
               .doc = "as torchvision's F.pad: fill, repeat the edge, mirror without / with the edge pixel"}};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    auto out = need_image(in);
    if (!out.ok()) return out;
    if (has(op, "padding") && numbers(op, "padding").size() == 3) {
      return param_error("padding", "takes 1, 2 or 4 numbers (n, [left/right, top/bottom], [l, t, r, b]), not 3");
    }
    if (numbers(op, "fill").size() == 2) return param_error("fill", "takes one number or [r, g, b], not 2 numbers");
    const auto [h, w] = square_or_pair(op);
    if (in.fixed_size()) {
      const auto [pw, ph] = random_crop_padded_size(in.width, in.height, op);
      if (pw < w || ph < h) {
        return param_error("size", std::to_string(h) + "x" + std::to_string(w) + " is larger than the " +
                                       std::to_string(ph) + "x" + std::to_string(pw) +
                                       " (padded) image it gets: give padding or pad_if_needed = true");
      }
    }
    return ValueType{.kind = Kind::kImage, .height = h, .width = w};
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) { return make_random_crop_kernel(op); };
  return d;
}

OpDef random_resized_crop_def() {
  OpDef d;
  d.name = "random_resized_crop";
  d.follows = "torchvision.transforms.RandomResizedCrop";
  d.random = true;
  d.params = {size_param("n: n x n; [h, w]"),
              {.key = "scale", .type = ParamType::kNumbers, .default_value = numbers_value({0.08, 1.0}), .min = 0,
               .min_len = 2, .max_len = 2, .doc = "range of the crop's area, as a fraction of the image's"},
              {.key = "ratio", .type = ParamType::kNumbers, .default_value = numbers_value({3.0 / 4.0, 4.0 / 3.0}),
               .min = 1e-6, .min_len = 2, .max_len = 2, .doc = "range of the crop's aspect ratio w / h (log-uniform)"},
              interpolation_param(), antialias_param()};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext&) -> Result<ValueType> {
    auto out = need_image(in);
    if (!out.ok()) return out;
    BATCHD_RETURN_IF_ERROR(check_antialias(op));
    for (const char* key : {"scale", "ratio"}) {
      const auto v = numbers(op, key);
      if (v[0] > v[1]) return param_error(key, "min is above max (torchvision warns and crops oddly; give [min, max])");
    }
    if (numbers(op, "scale")[0] <= 0 && numbers(op, "scale")[1] <= 0) return param_error("scale", "must not be 0");
    const auto [h, w] = square_or_pair(op);
    return ValueType{.kind = Kind::kImage, .height = h, .width = w};
  };
  d.compile = [](const wire::Op& op, const ValueType&, const CompileList&) {
    return make_random_resized_crop_kernel(op);
  };
  return d;
}

OpDef flip_def(bool horizontal) {
  OpDef d;
  d.name = horizontal ? "horizontal_flip" : "vertical_flip";
  d.follows = horizontal ? "torchvision.transforms.RandomHorizontalFlip" : "torchvision.transforms.RandomVerticalFlip";
  d.random = true;
  d.params = {p_param(0.5)};
  d.plan = [](const wire::Op&, const ValueType& in, const OpPlanContext&) { return need_image(in); };
  d.compile = [horizontal](const wire::Op& op, const ValueType&, const CompileList&) {
    return make_flip_kernel(horizontal, number(op, "p"));
  };
  return d;
}

}  // namespace

void add_geometry_ops(std::vector<OpDef>* defs) {
  defs->push_back(decode_def());
  defs->push_back(resize_def());
  defs->push_back(center_crop_def());
  defs->push_back(random_crop_def());
  defs->push_back(random_resized_crop_def());
  defs->push_back(flip_def(true));
  defs->push_back(flip_def(false));
}

}  // namespace batchd::daemon::ops
