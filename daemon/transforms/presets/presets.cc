#include "transforms/presets/presets.h"

#include "data/idx_dataset.h"
#include "data/imagefolder_dataset.h"  // dataset_classes
#include "transforms/ops/token_window.h"

namespace batchd::daemon {

Result<wire::VisionOptions> resolve_vision_options(VisionMode mode, const wire::VisionOptions& requested) {
  wire::VisionOptions o = requested;
  if (o.crop_size() == 0) o.set_crop_size(kDefaultCropSize);
  if (o.resize_size() == 0) o.set_resize_size(kDefaultResizeSize);
  if (o.crop_size() < 8 || o.crop_size() > 4096) {
    return Error(ErrorCode::kInvalidArgument, "crop_size " + std::to_string(o.crop_size()) +
                                                  " is out of range [8, 4096]");
  }
  if (mode == VisionMode::kVal && (o.resize_size() < o.crop_size() || o.resize_size() > 8192)) {
    return Error(ErrorCode::kInvalidArgument, "resize_size " + std::to_string(o.resize_size()) +
                                                  " must be at least crop_size (" + std::to_string(o.crop_size()) +
                                                  ") and at most 8192");
  }
  if (mode == VisionMode::kTrain) o.clear_resize_size();  // unused by RandomResizedCrop: not part of the stream
  return o;
}

namespace {

// Every pipeline, once: its names, the family of options it takes, and how it is built.
enum class Family { kFmnist, kVision, kLm };
struct Entry {
  const char* name;
  const char* alias;  // "" = none
  Family family;
  VisionMode mode;    // vision only
  bool normalize;     // fmnist: float32 normalized (else raw uint8); vision: ToTensor + Normalize (else uint8)
  bool cached = false;  // vision: a cache point ends the ops (cache_point.h)
};
constexpr Entry kPipelines[] = {
    {"fmnist", "", Family::kFmnist, VisionMode::kTrain, true},
    {"fmnist_u8", "", Family::kFmnist, VisionMode::kTrain, false},
    {"train224", "train", Family::kVision, VisionMode::kTrain, true},
    {"train224_u8", "train_u8", Family::kVision, VisionMode::kTrain, false},
    {"val224", "val", Family::kVision, VisionMode::kVal, true},
    {"val224_u8", "val_u8", Family::kVision, VisionMode::kVal, false},
    {"val224_cached", "val_cached", Family::kVision, VisionMode::kVal, true, true},
    {"val224_u8_cached", "val_u8_cached", Family::kVision, VisionMode::kVal, false, true},
    {"lm", "", Family::kLm, VisionMode::kTrain, false},
};

Result<const Entry*> find_entry(const std::string& name) {
  for (const Entry& e : kPipelines) {
    if (name == e.name || (*e.alias != '\0' && name == e.alias)) return &e;
  }
  std::string known;  // from the table, so that a new pipeline is listed
  for (const Entry& e : kPipelines) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return Error(ErrorCode::kNotFound, "unknown pipeline '" + name + "' (known: " + known + ")");
}

}  // namespace

Result<wire::PipelineOptions> resolve_pipeline_options(const std::string& name,
                                                       const wire::PipelineOptions& requested) {
  auto entry = find_entry(name);
  if (!entry.ok()) return entry.error();
  wire::PipelineOptions resolved;
  if (requested.has_lm() && (*entry)->family != Family::kLm) {
    return Error(ErrorCode::kInvalidArgument, "seq_len and sampling are options of pipeline 'lm' (token windows); "
                                              "pipeline '" + name + "' takes none: leave them unset");
  }
  switch ((*entry)->family) {
    case Family::kFmnist:
    case Family::kLm:
      if (requested.has_vision()) {
        return Error(ErrorCode::kInvalidArgument, "pipeline '" + name + "' takes no vision options (crop_size, "
                                                  "resize_size, exact_decode); leave them unset");
      }
      // lm: seq_len 0 stays "the dataset's" until the plan knows the dataset (resolve_lm_options).
      if ((*entry)->family == Family::kLm) *resolved.mutable_lm() = requested.lm();
      break;
    case Family::kVision: {
      auto vision = resolve_vision_options((*entry)->mode, requested.vision());
      if (!vision.ok()) return vision.error().with_context("pipeline '" + name + "'");
      *resolved.mutable_vision() = std::move(vision).value();
      break;
    }
  }
  return resolved;
}

bool is_preset(const std::string& name) { return find_entry(name).ok(); }

Result<wire::PipelineSpec> preset_spec(const std::string& name, const wire::PipelineOptions& options) {
  auto entry = find_entry(name);
  if (!entry.ok()) return entry.error();
  wire::PipelineSpec spec;
  auto add = [&spec](const char* op_name, std::vector<std::pair<const char*, wire::OpValue>> params) {
    wire::Op* op = spec.add_ops();
    op->set_name(op_name);
    for (auto& [key, value] : params) {
      auto* p = op->add_params();
      p->set_key(key);
      *p->mutable_value() = std::move(value);
    }
  };
  switch ((*entry)->family) {
    case Family::kLm:  // seq_len 0 stays "the dataset's" until planned against it (token_window.h)
      *spec.add_ops() = token_window_op(options.lm());
      return spec;
    case Family::kFmnist:
      add("idx_image", {});
      if (!(*entry)->normalize) {
        add("pil_to_tensor", {});
        return spec;
      }
      // ToTensor + Normalize((0.2860,), (0.3530,)): the Fashion-MNIST statistics of torchvision recipes and
      // ../shared/bench/torch_peer.py, as Python writes them (computed in float32 as torch does, idx_pipeline.h).
      add("to_tensor", {});
      add("normalize", {{"mean", ops::numbers_value({0.2860})}, {"std", ops::numbers_value({0.3530})}});
      return spec;
    case Family::kVision: break;
  }
  auto vision = resolve_vision_options((*entry)->mode, options.vision());
  if (!vision.ok()) return vision.error().with_context("pipeline '" + name + "'");
  const double crop = vision->crop_size();
  add("decode", {{"exact_decode", ops::flag_value(vision->exact_decode())}});
  if ((*entry)->mode == VisionMode::kTrain) {
    add("random_resized_crop", {{"size", ops::number_value(crop)}});
    add("horizontal_flip", {});
  } else {
    add("resize", {{"size", ops::number_value(vision->resize_size())}});
    add("center_crop", {{"size", ops::number_value(crop)}});
  }
  if ((*entry)->normalize) {
    add("to_tensor", {});
    // torchvision's reference values as Python writes them (doubles; the float32 arithmetic rounds them as torch
    // does), so that a recipe spelled out in TOML or Python has this very canonical spec.
    add("normalize", {{"mean", ops::numbers_value({0.485, 0.456, 0.406})},
                      {"std", ops::numbers_value({0.229, 0.224, 0.225})}});
  } else {
    add("pil_to_tensor", {});
  }
  if ((*entry)->cached) add("cache", {});
  return spec;
}


namespace {

// Whether `dataset` holds what the source op of `spec` reads; the errors name the pipeline and the dataset's format.
Status check_source_fits(const wire::PipelineSpec& spec, const std::string& name, bool preset, const Dataset& dataset) {
  const std::string& source = spec.ops_size() > 0 ? spec.ops(0).name() : "";
  const std::string is = "'" + dataset.name() + "' is " + dataset.format();
  if (source == "idx_image") {
    if (dynamic_cast<const IdxDataset*>(&dataset) != nullptr) return ok_status();
    return Error(ErrorCode::kInvalidArgument, "pipeline '" + name + "' needs an idx dataset; " + is);
  }
  if (source == "token_window") {
    if (dataset.tokens() != nullptr) return ok_status();
    return Error(ErrorCode::kInvalidArgument, "pipeline '" + name + "' needs a token dataset (format = \"tokens\"); " +
                                                  is);
  }
  if (dataset.images() != nullptr) return ok_status();
  if (preset) {
    return Error(ErrorCode::kInvalidArgument, "the vision pipelines (train224, train224_u8, val224, val224_u8) need "
                                              "an image dataset (imagefolder or webdataset); " + is);
  }
  return Error(ErrorCode::kInvalidArgument, "pipeline '" + name + "' is a list of image ops: they need an image "
                                            "dataset (imagefolder or webdataset); dataset " + is);
}

}  // namespace

Result<ops::PlannedSpec> plan_for_dataset(const std::string& name, const wire::PipelineOptions& options,
                                          const wire::PipelineSpec& spec, const Dataset& dataset,
                                          const ops::OpLimits& limits) {
  const bool preset = spec.ops_size() == 0 && spec.batch_ops_size() == 0;
  wire::PipelineSpec chosen;
  if (preset) {
    auto made = preset_spec(name, options);
    if (!made.ok()) return made.error();
    chosen = std::move(made).value();
  }
  const wire::PipelineSpec& planned_spec = preset ? chosen : spec;
  BATCHD_RETURN_IF_ERROR(check_source_fits(planned_spec, name, preset, dataset));
  // fmnist and lm are sized by the dataset the operator declared, not by the bounds on what a client may ask for
  // (limits.*): planned under the hard bounds only, as before they were specs. The vision presets keep the limits.
  const bool sized_by_dataset = preset && planned_spec.ops_size() > 0 && planned_spec.ops(0).name() != "decode";
  const ops::OpLimits& bounds = sized_by_dataset ? ops::kNoLimits : limits;
  auto planned = ops::plan_spec(planned_spec, ops::OpPlanContext{&bounds, dataset_classes(dataset), &dataset});
  if (!planned.ok()) return planned.error().with_context("pipeline '" + name + "'");
  return planned;
}

}  // namespace batchd::daemon
