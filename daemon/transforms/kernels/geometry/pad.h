// pad.h — torchvision 0.14's F.pad for PIL images (functional_pil.py pad): constant (ImageOps.expand with the fill),
// edge, reflect and symmetric (numpy.pad of the HWC array, numpy 1.24's algorithm, large paddings included).
//
// A padding is computed as one index map per axis (output position -> source index, or -1 for the fill), so that
// several paddings in a row (RandomCrop's padding, then its pad_if_needed) compose into one pass over the output
// and a crop of a padded image reads only its window (random_crop.h). Images are HWC uint8 RGB; `dst` buffers are
// reused (no allocation once grown); src and dst must differ.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "transforms/kernels/resample.h"

namespace batchd::daemon::geometry {

enum class PadMode { kConstant, kEdge, kReflect, kSymmetric };

// "constant", "edge", "reflect", "symmetric" (torchvision's padding_mode); false for another word.
bool parse_pad_mode(std::string_view name, PadMode* mode);

struct Padding {
  int left = 0, top = 0, right = 0, bottom = 0;
};

// torchvision's padding argument: [n] pads every side by n; [lr, tb] left and right by lr, top and bottom by tb;
// [l, t, r, b] each side. Precondition: 1, 2 or 4 values, each >= 0 (torchvision's negative paddings, which crop,
// are refused by the ops' schema).
Padding padding_from(std::span<const int> values);

// torchvision's fill for an RGB image (_parse_fill, then PIL's ink): [v] is (v, v, v); each value truncated to an
// integer (Python's int()) and clamped to [0, 255] (Pillow's CLIP8). Precondition: 1 or 3 values.
struct Fill {
  uint8_t rgb[3] = {0, 0, 0};
};
Fill fill_from(std::span<const double> values);

// The index map of one axis of `n` pixels padded by `before` and `after` in `mode`: map[i] for i in
// [0, before + n + after) is the source index whose value position i takes, or -1 where it takes the fill
// (kConstant). reflect/symmetric follow numpy.pad exactly (its iterative reflection of chunks when a padding is
// longer than the axis, and edge replication for an axis of one pixel).
void pad_axis_map(int n, int before, int after, PadMode mode, std::vector<int>* map);

// `map` (an axis already padded, as pad_axis_map made it) padded again by before/after in `mode`: the map of the
// second F.pad applied to the output of the first.
void pad_axis_map_again(int before, int after, PadMode mode, std::vector<int>* map);

// dst(y, x) = src(ys[y], xs[x]), or `fill` where either index is -1: dst is xs.size() x ys.size().
void remap_image(const RgbImage& src, std::span<const int> xs, std::span<const int> ys, const Fill& fill,
                 RgbImage* dst);

// F.pad(img, padding, fill, padding_mode) for a PIL RGB image.
void pad_image(const RgbImage& src, const Padding& padding, PadMode mode, const Fill& fill, RgbImage* dst);

}  // namespace batchd::daemon::geometry
