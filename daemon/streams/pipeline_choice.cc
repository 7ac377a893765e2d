#include "streams/pipeline_choice.h"

#include <algorithm>
#include <cctype>

#include "streams/stream_settings.h"
#include "streams/lm_plan.h"
#include "transforms/presets/pipeline.h"
#include "transforms/presets/vision_pipeline.h"

namespace batchd::daemon {

namespace {

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }

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

}  // namespace

bool is_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

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
    BATCHD_RETURN_IF_ERROR(refuse_lm_fields(req, chosen.name));
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
    BATCHD_RETURN_IF_ERROR(refuse_lm_fields(req, req.pipeline()));
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
  auto spec = preset_spec(req.pipeline(), chosen.options);
  if (!spec.ok()) return spec.error();
  chosen.spec = std::move(spec).value();
  return chosen;
}

}  // namespace batchd::daemon
