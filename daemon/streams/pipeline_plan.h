// pipeline_plan.h — the stream's pipeline as OpenStream's plan (plan.h) decides it, in one function from the request
// and the dataset: which pipeline (a spec the request carries, a [pipelines.NAME] of the daemon's config, or a preset
// by name with its options resolved), its canonical spec planned for the dataset (transforms/presets/presets.h
// plan_for_dataset: presets are specs too, fmnist and lm included), its tensors, and how many samples the sampler
// draws from (a token_window spec: the windows its seq_len and sampling make, ops/token_window.h).
// Part of plan(); pure (no I/O beyond the loaded dataset); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "data/dataset.h"
#include "streams/plan.h"
#include "transforms/presets/pipeline.h"  // TensorDesc

namespace batchd::daemon {

struct PipelinePlan {
  std::string name;               // the display name: the preset's, the config pipeline's, or the spec's ("custom")
  wire::PipelineOptions options;  // a preset's, resolved (lm: seq_len never 0); empty for a spec
  wire::PipelineSpec spec;        // canonical (ops/spec_plan.h), what the workers run and StreamOpened.spec shows
  bool client_spec = false;       // the spec is the request's own (not a [pipelines.NAME] or a preset's)
  std::vector<TensorDesc> tensors;  // the pipeline's, in slot order, without "index"
  uint64_t samples = 0;           // the sampler's dataset_size: the dataset's samples, or a token_window's windows
  uint64_t random_epoch_windows = 0;  // SamplerOptions.random_epoch_windows (token_window "random"), else 0
  bool token_windows = false;     // the spec's source is token_window (the plan's errors then suggest seq_len)
};

// kInvalidArgument naming the option and the fix: a spec beside a daemon pipeline's name, a bad display name, preset
// options with a spec or a config pipeline, options of another pipeline family, legacy and new vision options that
// disagree, seq_len/sampling beside a pipeline that takes none or disagreeing with pipeline_options.lm, a pipeline
// that does not fit the dataset (naming its format), a spec that does not plan (naming the op and the key), random
// windows with a subset or repeated_aug; kNotFound for an unknown name (listing the presets and the config's
// pipelines).
Result<PipelinePlan> plan_pipeline(const wire::OpenStream& req, const PlanContext& context, const Dataset& dataset);

// 1 to 64 characters of A-Z a-z 0-9 . _ - (a spec's display name, a share name).
bool is_name(const std::string& name);

}  // namespace batchd::daemon
