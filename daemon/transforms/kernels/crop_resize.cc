#include "transforms/kernels/crop_resize.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace batchd::daemon {

Status CropResizer::run(std::span<const uint8_t> bytes, const std::string& path, const ImageHeader& header,
                        const CropSpec& spec, DecodeMode mode, uint8_t* rgb, StageTimes* times) {
  auto t = std::chrono::steady_clock::now();
  const bool fast = mode != DecodeMode::kExact;
  const int w = header.width, h = header.height, c = spec.crop;
  // Decodes at `scale`: with kFastRegion only `want` (widened to iMCU columns), else all of it. *origin: where
  // image_'s top-left pixel lies in the scaled image.
  auto decode = [&](Scale scale, PixelRect want, PixelRect* origin) -> Status {
    if (mode == DecodeMode::kFastRegion) {
      return decoder_->decode_region(bytes, path, header, scale, want, &image_, origin, /*fast=*/true);
    }
    BATCHD_RETURN_IF_ERROR(decoder_->decode(bytes, path, header, scale, &image_, fast));
    *origin = {};
    return ok_status();
  };
  ResampleAxis ax{}, ay{};
  Scale scale;
  PixelRect origin;
  int x_origin = 0, y_origin = 0;  // where the resample's source extent starts in image_
  if (!spec.center) {
    const CropBox& box = spec.box;
    // The crop box in the (possibly DCT-scaled) image; crop first, then resize, as torchvision does.
    if (fast) scale = decoder_->choose_scale(header, box.width, box.height, c, c);
    const int sw = scaled_size(w, scale), sh = scaled_size(h, scale);
    const double sx = static_cast<double>(sw) / w, sy = static_cast<double>(sh) / h;
    const double x0 = box.left * sx, x1 = (box.left + box.width) * sx;
    const double y0 = box.top * sy, y1 = (box.top + box.height) * sy;
    const int rx = static_cast<int>(std::floor(x0)), ry = static_cast<int>(std::floor(y0));
    const int rw = std::min(sw, static_cast<int>(std::ceil(x1))) - rx;
    const int rh = std::min(sh, static_cast<int>(std::ceil(y1))) - ry;
    BATCHD_RETURN_IF_ERROR(decode(scale, {rx, ry, rw, rh}, &origin));
    ax = {rw, x0 - rx, std::min(x1 - rx, static_cast<double>(rw)), c, 0, c};
    ay = {rh, y0 - ry, std::min(y1 - ry, static_cast<double>(rh)), c, 0, c};
    x_origin = rx - origin.x;
    y_origin = ry - origin.y;
  } else {
    int nw = 0, nh = 0;
    resize_shorter_side(w, h, spec.resize, &nw, &nh);
    if (fast) scale = decoder_->choose_scale(header, w, h, nw, nh);
    const int sw = scaled_size(w, scale), sh = scaled_size(h, scale);
    ax = {sw, 0.0, static_cast<double>(sw), nw, center_crop_offset(nw, c), c};
    ay = {sh, 0.0, static_cast<double>(sh), nh, center_crop_offset(nh, c), c};
    const auto [x0, x1] = resample_input_range(ax, spec.filter);  // only these pixels are read by the center crop
    const auto [y0, y1] = resample_input_range(ay, spec.filter);
    BATCHD_RETURN_IF_ERROR(decode(scale, {x0, y0, x1 - x0, y1 - y0}, &origin));
    x_origin = -origin.x;
    y_origin = -origin.y;
  }
  if (times != nullptr) times->decode_ns += stage_ns(t);
  resample(image_, x_origin, y_origin, ax, ay, spec.filter, rgb, &scratch_,
           fast ? ResampleOrder::kFast : ResampleOrder::kPillow);
  if (times != nullptr) times->resize_ns += stage_ns(t);
  return ok_status();
}

}  // namespace batchd::daemon
