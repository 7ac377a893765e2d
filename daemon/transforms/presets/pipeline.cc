#include "transforms/presets/pipeline.h"

#include "batchd/wire/convert.h"
#include "batchd/wire/segment_layout.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include "transforms/presets/fmnist_pipeline.h"
#include "transforms/presets/lm_pipeline.h"
#include "transforms/ops/op.h"
#include "transforms/spec/spec_pipeline.h"
#include "transforms/presets/vision_pipeline.h"

namespace batchd::daemon {

void SampleProgress::crash() {
  ::signal(SIGSEGV, SIG_DFL);
  ::raise(SIGSEGV);
  std::abort();
}

void SampleProgress::hang() {
  for (;;) ::pause();  // until the daemon's watchdog kills this worker
}

Status share_fault_flags(FaultInjection* faults) {
  if (faults->crash_in_cache_fill < 0) return ok_status();
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return posix_error("mmap of the fault injection's shared flags", errno);
  faults->cache_fill_crashed = new (page) std::atomic<uint32_t>(0);  // the process's life: never unmapped
  return ok_status();
}

uint64_t TensorDesc::sample_bytes() const {
  return wire::checked_sample_bytes(wire::dtype_size(dtype), sample_shape).value_or(UINT64_MAX);
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
  if ((*entry)->family != Family::kVision) return wire::PipelineSpec();  // fmnist, fmnist_u8, lm: their own code
  auto vision = resolve_vision_options((*entry)->mode, options.vision());
  if (!vision.ok()) return vision.error().with_context("pipeline '" + name + "'");
  const double crop = vision->crop_size();
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

Result<std::unique_ptr<Pipeline>> make_pipeline(const std::string& name, std::shared_ptr<const Dataset> dataset,
                                                const wire::PipelineOptions& options, const wire::PipelineSpec& spec,
                                                const CacheBinding& cache) {
  if (spec.ops_size() > 0) return make_spec_pipeline(spec, std::move(dataset), cache);
  auto entry = find_entry(name);
  if (!entry.ok()) return entry.error();
  switch ((*entry)->family) {
    case Family::kFmnist:
      return make_fmnist_pipeline((*entry)->normalize ? FmnistOutput::kNormalizedFloat : FmnistOutput::kRawUint8,
                                  std::move(dataset));
    case Family::kVision: {
      if (dataset->images() == nullptr) {
        return Error(ErrorCode::kInvalidArgument, "the vision pipelines (train224, train224_u8, val224, val224_u8) "
                                                  "need an image dataset (imagefolder or webdataset); '" +
                                                      dataset->name() + "' is " + dataset->format());
      }
      auto preset = preset_spec(name, options);
      if (!preset.ok()) return preset.error();
      return make_spec_pipeline(*preset, std::move(dataset), cache);
    }
    case Family::kLm:
      return make_lm_pipeline(std::move(dataset), options.lm());
  }
  return Error(ErrorCode::kInternal, "pipeline '" + name + "' has no builder");
}

}  // namespace batchd::daemon
