// lm_plan.h — the lm pipeline's part of OpenStream's plan (plan.h): the window length and the sampling a stream
// chose (OpenStream.seq_len, OpenStream.sampling; transforms/presets/lm_pipeline.h says what they mean), and what they
// make of its sampler.
//
// The request gives them at the top level; the plan carries them resolved in pipeline_options.lm (WorkerAttach), so
// the workers build the stream's windows from it and two subscribers of a share compare them with the other
// pipeline options. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "data/dataset.h"

namespace batchd::daemon {

// The request's pipeline_options with seq_len and sampling mapped into pipeline_options.lm (when either is set).
// kInvalidArgument if the request also sets pipeline_options.lm to something else.
Result<wire::PipelineOptions> with_lm_fields(const wire::OpenStream& req, wire::PipelineOptions options);

// kInvalidArgument if the request sets seq_len or sampling for pipeline `pipeline`, an op list or a config pipeline
// (which read images, not token windows).
Status refuse_lm_fields(const wire::OpenStream& req, const std::string& pipeline);

// What an lm stream's options make of its sampler.
struct LmSamples {
  uint64_t samples = 0;               // the sampler's dataset_size (lm_samples), StreamOpened.dataset_size
  uint64_t random_epoch_windows = 0;  // SamplerOptions.random_epoch_windows (0: tiled windows)
};

// Resolves `*lm` against `dataset` (resolve_lm_options: seq_len filled in and bounded) and sizes the sampler.
// kInvalidArgument, naming the option and the fix, for a seq_len out of range or random windows with a subset or
// with repeated_aug.
Result<LmSamples> plan_lm(const wire::OpenStream& req, const Dataset& dataset, wire::LmOptions* lm);

}  // namespace batchd::daemon
