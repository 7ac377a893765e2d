// presets.h — the built-in pipelines by name, each an op list (a PipelineSpec) with its options resolved, and the one
// function that plans a stream's pipeline (a preset's name or a spec) for a dataset.
//
// Presets (torchvision semantics; docs/operations.md "Pipelines" lists their specs):
//   fmnist       [idx_image, to_tensor, normalize(mean [0.2860], std [0.3530])]: image float32 [B,1,H,W] =
//                (x/255 - 0.2860) / 0.3530, computed in float32 exactly as torch does; label int64 [B]. An idx dataset.
//   fmnist_u8    [idx_image, pil_to_tensor]: the raw pixels, image uint8 [B,1,H,W]; label int64 [B].
//   train224     RandomResizedCrop(C, scale=(0.08, 1), ratio=(3/4, 4/3)) + RandomHorizontalFlip(0.5) + ToTensor +
//                Normalize(ImageNet mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225)): image float32
//                [B,3,C,C]; label int64 [B]. C = crop_size (224). Needs an image dataset (imagefolder, webdataset).
//   train224_u8  the same without ToTensor/Normalize: image uint8 [B,3,C,C] (normalize on the GPU).
//   val224       Resize(R) (shorter side, bilinear, antialiased) + CenterCrop(C) + ToTensor + Normalize: float32
//                [B,3,C,C]. R = resize_size (256).
//   val224_u8    the same without ToTensor/Normalize: image uint8 [B,3,C,C].
//   val224_cached, val224_u8_cached   val224 and val224_u8 followed by a cache point (cache_point.h): the first pass
//                decodes, later epochs and streams copy the sample's bytes from the daemon's cache (cache.max_bytes).
//   lm           [token_window(seq_len, sampling)]: language-model windows, input_ids and targets int64 [B,T]
//                (ops/token_window.h). T = the stream's seq_len, by default the dataset's. A token dataset.
// `train`, `train_u8`, `val`, `val_u8`, `val_cached` and `val_u8_cached` are the same pipelines by their size-free
// names. Pure functions; thread-safe.
#pragma once

#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "data/dataset.h"
#include "transforms/ops/spec_plan.h"

namespace batchd::daemon {

enum class VisionMode { kTrain, kVal };

inline constexpr uint32_t kDefaultCropSize = 224;    // torchvision's ImageNet recipes
inline constexpr uint32_t kDefaultResizeSize = 256;  // val: Resize(256) then CenterCrop(224)

// The vision presets' options: applies the defaults (crop_size 224, resize_size 256; exact_decode false) and checks
// the ranges: crop_size in [8, 4096]; val: resize_size in [crop_size, 8192]. kInvalidArgument names the option.
// Idempotent.
Result<wire::VisionOptions> resolve_vision_options(VisionMode mode, const wire::VisionOptions& requested);

// The options of pipeline `name` with every default applied and every range checked (OpenStream's plan calls this
// once; workers receive the result in WorkerAttach). kNotFound for an unknown name (lists the known ones);
// kInvalidArgument for an option out of range or options of another pipeline family (e.g. vision options for
// fmnist or lm, lm options for any other), naming the option. lm's seq_len stays 0 (= the dataset's) here: the plan
// resolves it against the dataset (token_window.h resolve_lm_options).
Result<wire::PipelineOptions> resolve_pipeline_options(const std::string& name, const wire::PipelineOptions& requested);

// True for the built-in pipelines' names (and aliases).
bool is_preset(const std::string& name);

// The op list of preset `name` with `options` (resolved or not). kNotFound for an unknown name; kInvalidArgument
// for an option out of range.
Result<wire::PipelineSpec> preset_spec(const std::string& name, const wire::PipelineOptions& options);

// The one planner of a stream's pipeline for `dataset`: `spec` when it has ops, else preset `name`'s spec with
// `options`; checked that the dataset holds what its source op reads (kInvalidArgument naming pipeline `name` and
// the dataset's format), then planned (ops/spec_plan.h plan_spec under `limits`, the dataset's classes and sizes):
// the canonical spec (a token_window's seq_len resolved), its source, its tensors. Errors of the plan are prefixed
// "pipeline 'NAME': ". The daemon's OpenStream (streams/pipeline_plan.h) and each worker (make_pipeline) call it.
Result<ops::PlannedSpec> plan_for_dataset(const std::string& name, const wire::PipelineOptions& options,
                                          const wire::PipelineSpec& spec, const Dataset& dataset,
                                          const ops::OpLimits& limits);

}  // namespace batchd::daemon
