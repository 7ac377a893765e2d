#include "streams/lm_plan.h"

#include "transforms/presets/lm_pipeline.h"

namespace batchd::daemon {

namespace {

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }

}  // namespace

Result<wire::PipelineOptions> with_lm_fields(const wire::OpenStream& req, wire::PipelineOptions options) {
  if (req.seq_len() == 0 && req.sampling() == wire::TILED_WINDOWS) return options;
  wire::LmOptions mapped;
  mapped.set_seq_len(req.seq_len());
  mapped.set_sampling(req.sampling());
  if (options.has_lm() && options.lm().SerializeAsString() != mapped.SerializeAsString()) {
    return invalid("seq_len/sampling (" + mapped.ShortDebugString() + ") and pipeline_options.lm (" +
                   options.lm().ShortDebugString() + ") disagree; set them once");
  }
  *options.mutable_lm() = mapped;
  return options;
}

Status refuse_lm_fields(const wire::OpenStream& req, const std::string& pipeline) {
  if (req.seq_len() == 0 && req.sampling() == wire::TILED_WINDOWS && !req.pipeline_options().has_lm()) {
    return ok_status();
  }
  return invalid("seq_len and sampling are options of pipeline 'lm' (token windows); pipeline '" + pipeline +
                 "' is a list of image ops and takes none: leave them unset");
}

Result<LmSamples> plan_lm(const wire::OpenStream& req, const Dataset& dataset, wire::LmOptions* lm) {
  auto resolved = resolve_lm_options(*lm, dataset);
  if (!resolved.ok()) return resolved.error().with_context("dataset '" + dataset.name() + "'");
  *lm = std::move(resolved).value();
  const TokenWindows& tokens = *dataset.tokens();  // resolve_lm_options refused a dataset without
  LmSamples out;
  out.samples = lm_samples(tokens, *lm);
  if (lm->sampling() == wire::RANDOM_WINDOWS) {
    if (req.has_subset()) {
      return invalid("sampling RANDOM_WINDOWS draws windows at any token offset of '" + dataset.name() +
                     "': a subset of window indices means nothing to it; drop the subset, or use TILED_WINDOWS");
    }
    if (req.repeated_aug().repeats() > 1 || req.repeated_aug().selected_samples() > 0) {
      return invalid("sampling RANDOM_WINDOWS draws every batch anew: repeated_aug (copies of each sample per "
                     "epoch) means nothing to it; drop repeated_aug, or use TILED_WINDOWS");
    }
    out.random_epoch_windows = lm_windows(tokens, *lm);
  }
  return out;
}

}  // namespace batchd::daemon
