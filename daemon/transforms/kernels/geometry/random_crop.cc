#include "transforms/kernels/geometry/random_crop.h"

#include <string>
#include <vector>

namespace batchd::daemon::geometry {

namespace {

// pad_if_needed's extra padding of one axis (before and after alike): the missing length, when there is one.
int needed(int length, int crop, bool pad_if_needed) { return pad_if_needed && length < crop ? crop - length : 0; }

std::string size_text(int height, int width) { return std::to_string(height) + "x" + std::to_string(width); }

// The source index of each position of one padded axis: `padding` first, then pad_if_needed's.
void axis_map(int n, int before, int after, int crop, const RandomCropParams& p, std::vector<int>* map) {
  pad_axis_map(n, before, after, p.mode, map);
  const int extra = needed(static_cast<int>(map->size()), crop, p.pad_if_needed);
  if (extra > 0) pad_axis_map_again(extra, extra, p.mode, map);
}

}  // namespace

PaddedSize random_crop_padded_size(int width, int height, const RandomCropParams& p) {
  const Padding pad = p.padding.value_or(Padding{});
  int w = width + pad.left + pad.right, h = height + pad.top + pad.bottom;
  w += 2 * needed(w, p.width, p.pad_if_needed);
  h += 2 * needed(h, p.height, p.pad_if_needed);
  return {w, h};
}

Result<CropBox> random_crop_window(const PaddedSize& padded, const RandomCropParams& p, SampleRng& rng) {
  if (padded.height < p.height || padded.width < p.width) {
    return Error(ErrorCode::kInvalidArgument,
                 "random_crop: crop size " + size_text(p.height, p.width) + " is larger than the (padded) image " +
                     size_text(padded.height, padded.width) +
                     ": give padding or pad_if_needed = true, or a smaller size");
  }
  if (padded.width == p.width && padded.height == p.height) return CropBox{0, 0, p.width, p.height};
  const int top = static_cast<int>(rng.randint(0, padded.height - p.height));
  const int left = static_cast<int>(rng.randint(0, padded.width - p.width));
  return CropBox{left, top, p.width, p.height};
}

Status random_crop(const RgbImage& src, const RandomCropParams& p, SampleRng& rng, RgbImage* dst) {
  const Padding pad = p.padding.value_or(Padding{});
  thread_local std::vector<int> xs, ys;
  axis_map(src.width, pad.left, pad.right, p.width, p, &xs);
  axis_map(src.height, pad.top, pad.bottom, p.height, p, &ys);
  const PaddedSize padded{static_cast<int>(xs.size()), static_cast<int>(ys.size())};
  const Result<CropBox> box = random_crop_window(padded, p, rng);
  if (!box.ok()) return box.error();
  remap_image(src, std::span<const int>(xs).subspan(box->left, box->width),
              std::span<const int>(ys).subspan(box->top, box->height), p.fill, dst);
  return ok_status();
}

}  // namespace batchd::daemon::geometry
