#include "transforms/presets/vision_pipeline.h"


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

}  // namespace batchd::daemon
