// pipeline_choice.h — which pipeline an OpenStream asks for, and its options, as the plan (plan.h) needs them:
// a spec the request carries (an op list), a [pipelines.NAME] of the daemon's config, or a built-in pipeline by name
// with its options resolved (transforms/presets/pipeline.h). Part of plan(); pure; thread-safe.
#pragma once

#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "streams/plan.h"

namespace batchd::daemon {

// The stream's pipeline: its display name, its options (presets) and its spec (empty for fmnist, fmnist_u8, lm).
// For lm, options.lm holds the request's seq_len / sampling, seq_len 0 = the dataset's (lm_plan.h resolves it).
struct ChosenPipeline {
  std::string name;
  wire::PipelineOptions options;
  wire::PipelineSpec spec;
  bool client_spec = false;  // the spec is the request's own (not a [pipelines.NAME] or a preset's)
};

// kInvalidArgument naming the option and the fix: a spec beside a daemon pipeline's name, a bad display name, preset
// options with a spec or a config pipeline, options of another pipeline family, legacy and new vision options that
// disagree; kNotFound for an unknown name (listing the presets and the config's pipelines).
Result<ChosenPipeline> choose_pipeline(const wire::OpenStream& req, const PlanContext& context);

// 1 to 64 characters of A-Z a-z 0-9 . _ - (a spec's display name, a share name).
bool is_name(const std::string& name);

}  // namespace batchd::daemon
