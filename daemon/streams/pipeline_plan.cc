#include "streams/pipeline_plan.h"

#include <algorithm>
#include <cctype>

#include "streams/stream_settings.h"
#include "transforms/ops/token_window.h"
#include "transforms/presets/presets.h"

namespace batchd::daemon {

bool is_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

namespace {

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }

// The stream's pipeline before it is planned for the dataset: its display name, its options (presets) and the spec
// the request or the config gives (empty for a preset: plan_for_dataset makes the preset's).
struct ChosenPipeline {
  std::string name;
  wire::PipelineOptions options;
  wire::PipelineSpec spec;
  bool client_spec = false;
};

// The request's pipeline_options with seq_len and sampling mapped into pipeline_options.lm (when either is set).
// kInvalidArgument if the request also sets pipeline_options.lm to something else.
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

// kInvalidArgument if the request sets seq_len or sampling for pipeline `pipeline`, an op list or a config pipeline
// (`spec`: a token_window spec carries its own seq_len and sampling).
Status refuse_lm_fields(const wire::OpenStream& req, const std::string& pipeline, const wire::PipelineSpec& spec) {
  if (req.seq_len() == 0 && req.sampling() == wire::TILED_WINDOWS && !req.pipeline_options().has_lm()) {
    return ok_status();
  }
  if (spec.ops_size() > 0 && spec.ops(0).name() == "token_window") {
    return invalid("seq_len and sampling are options of pipeline 'lm'; pipeline '" + pipeline + "' is a spec whose "
                   "token_window carries its own seq_len and sampling: set them there and leave these unset");
  }
  return invalid("seq_len and sampling are options of pipeline 'lm' (token windows); pipeline '" + pipeline +
                 "' is a list of image ops and takes none: leave them unset");
}

// pipeline_options as the request means them. Clients before 0.2 sent the vision options only as top-level fields,
// with their defaults (224, 256, false) for every stream whatever the pipeline: such values mean "unset", and any
// other value is mapped into pipeline_options.vision (so a pipeline that takes no vision options refuses it rather
// than ignoring it). Clients from 0.2 send pipeline_options.vision and, for daemons before 0.2, the same values at
// the top level: the two must agree.
Result<wire::PipelineOptions> requested_pipeline_options(const wire::OpenStream& req) {
  const bool legacy = (req.crop_size() != 0 && req.crop_size() != kDefaultCropSize) ||
                      (req.resize_size() != 0 && req.resize_size() != kDefaultResizeSize) || req.exact_decode();
  if (!legacy) return with_lm_fields(req, req.pipeline_options());
  wire::VisionOptions mapped;
  mapped.set_crop_size(req.crop_size());
  mapped.set_resize_size(req.resize_size());
  mapped.set_exact_decode(req.exact_decode());
  if (req.pipeline_options().has_vision()) {
    if (req.pipeline_options().vision().SerializeAsString() == mapped.SerializeAsString()) {
      return with_lm_fields(req, req.pipeline_options());
    }
    return invalid("the top-level crop_size/resize_size/exact_decode (" + mapped.ShortDebugString() +
                   ") and pipeline_options.vision (" + req.pipeline_options().vision().ShortDebugString() +
                   ") disagree; set them to the same values, or only pipeline_options.vision");
  }
  wire::PipelineOptions options = req.pipeline_options();
  *options.mutable_vision() = mapped;
  return with_lm_fields(req, std::move(options));
}

// Which pipeline the request asks for, and its options (kNotFound for an unknown name).
Result<ChosenPipeline> choose_pipeline(const wire::OpenStream& req, const PlanContext& context) {
  ChosenPipeline chosen;
  const bool configured = context.pipelines != nullptr && context.pipelines->count(req.pipeline()) > 0;
  if (req.spec().ops_size() > 0 || req.spec().batch_ops_size() > 0) {
    chosen.name = req.pipeline().empty() ? "custom" : req.pipeline();
    if (is_preset(req.pipeline()) || configured) {
      return invalid("pipeline '" + req.pipeline() + "' names a pipeline of the daemon, and the request carries its "
                     "own spec too: leave pipeline empty (or give it a name of your own) to use the spec");
    }
    if (!is_name(chosen.name)) {
      return invalid("pipeline name '" + chosen.name.substr(0, 80) + "' (the spec's display name) is not 1 to 64 "
                     "characters of A-Z a-z 0-9 . _ -");
    }
    BATCHD_RETURN_IF_ERROR(refuse_lm_fields(req, chosen.name, req.spec()));
    if (req.has_pipeline_options() || req.crop_size() != 0 || req.resize_size() != 0 || req.exact_decode()) {
      return invalid("pipeline_options (crop_size, resize_size, exact_decode) belong to the presets; a spec "
                     "carries its own parameters (e.g. decode's exact_decode, random_resized_crop's size)");
    }
    chosen.spec = req.spec();
    chosen.client_spec = true;
    return chosen;
  }
  chosen.name = req.pipeline();
  if (configured) {
    BATCHD_RETURN_IF_ERROR(refuse_lm_fields(req, req.pipeline(), context.pipelines->at(req.pipeline())));
    if (req.has_pipeline_options() && req.pipeline_options().ByteSizeLong() > 0) {
      return invalid("pipeline '" + req.pipeline() + "' is the daemon's [pipelines." + req.pipeline() +
                     "]: it takes no pipeline_options (its ops carry their parameters)");
    }
    chosen.spec = context.pipelines->at(req.pipeline());
    return chosen;
  }
  auto requested = requested_pipeline_options(req);
  if (!requested.ok()) return requested.error();
  auto options = resolve_pipeline_options(req.pipeline(), *requested);
  if (!options.ok()) {
    if (options.error().code() == ErrorCode::kNotFound && context.pipelines != nullptr) {
      std::string mine;
      for (const auto& [name, spec] : *context.pipelines) mine += (mine.empty() ? "" : ", ") + name;
      if (!mine.empty()) return Error(ErrorCode::kNotFound, options.error().message() + "; the config's: " + mine);
    }
    return options.error();
  }
  chosen.options = std::move(options).value();
  return chosen;
}

// A token_window spec's options resolved (from its canonical op), and the samples its sampler draws from.
Status plan_token_windows(const wire::OpenStream& req, const Dataset& dataset, PipelinePlan* plan) {
  const wire::LmOptions lm = token_window_options(plan->spec.ops(0));
  if (plan->options.has_lm()) *plan->options.mutable_lm() = lm;  // the preset lm's, resolved for WorkerAttach
  plan->token_windows = true;
  const TokenWindows& tokens = *dataset.tokens();  // plan_for_dataset refused a dataset without
  plan->samples = lm_samples(tokens, lm);
  if (lm.sampling() != wire::RANDOM_WINDOWS) return ok_status();
  if (req.has_subset()) {
    return invalid("sampling RANDOM_WINDOWS draws windows at any token offset of '" + dataset.name() +
                   "': a subset of window indices means nothing to it; drop the subset, or use TILED_WINDOWS");
  }
  if (req.repeated_aug().repeats() > 1 || req.repeated_aug().selected_samples() > 0) {
    return invalid("sampling RANDOM_WINDOWS draws every batch anew: repeated_aug (copies of each sample per "
                   "epoch) means nothing to it; drop repeated_aug, or use TILED_WINDOWS");
  }
  plan->random_epoch_windows = lm_windows(tokens, lm);
  return ok_status();
}

}  // namespace

Result<PipelinePlan> plan_pipeline(const wire::OpenStream& req, const PlanContext& context, const Dataset& dataset) {
  auto chosen = choose_pipeline(req, context);
  if (!chosen.ok()) return chosen.error();
  // The preset lm: its seq_len resolved first, so that its errors name the dataset (as the planned op's would not).
  if (chosen->options.has_lm() && dataset.tokens() != nullptr) {
    auto lm = resolve_lm_options(chosen->options.lm(), dataset);
    if (!lm.ok()) return lm.error().with_context("dataset '" + dataset.name() + "'");
    *chosen->options.mutable_lm() = std::move(lm).value();
  }
  const ops::OpLimits bounds = op_limits(context.limits);
  auto planned = plan_for_dataset(chosen->name, chosen->options, chosen->spec, dataset, bounds);
  if (!planned.ok()) return planned.error();
  PipelinePlan plan;
  plan.name = std::move(chosen->name);
  plan.options = std::move(chosen->options);
  plan.spec = std::move(planned->canonical);
  plan.client_spec = chosen->client_spec;
  plan.tensors = std::move(planned->tensors);
  plan.samples = dataset.size();
  if (planned->source == ops::Source::kTokenWindow) BATCHD_RETURN_IF_ERROR(plan_token_windows(req, dataset, &plan));
  return plan;
}

}  // namespace batchd::daemon
