#include "transforms/kernels/geometry/pad.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace batchd::daemon::geometry {

bool parse_pad_mode(std::string_view name, PadMode* mode) {
  if (name == "constant") *mode = PadMode::kConstant;
  else if (name == "edge") *mode = PadMode::kEdge;
  else if (name == "reflect") *mode = PadMode::kReflect;
  else if (name == "symmetric") *mode = PadMode::kSymmetric;
  else return false;
  return true;
}

Padding padding_from(std::span<const int> v) {
  if (v.size() == 4) return {v[0], v[1], v[2], v[3]};
  if (v.size() == 2) return {v[0], v[1], v[0], v[1]};
  return {v[0], v[0], v[0], v[0]};
}

Fill fill_from(std::span<const double> values) {
  Fill fill;
  for (int c = 0; c < 3; ++c) {
    const double v = std::trunc(values[values.size() == 3 ? c : 0]);
    fill.rgb[c] = static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
  }
  return fill;
}

namespace {

// numpy.pad's reflect/symmetric along one axis (numpy/lib/arraypad.py, _set_reflect_both called until both sides
// are filled), run on the index map instead of the values: each round mirrors at most the filled length onto each
// side, the left side first, the filled region growing by what the round wrote.
void reflect_both(std::vector<int>& m, int before, int after, bool symmetric) {
  const int total = static_cast<int>(m.size());
  const int edge = symmetric ? 1 : 0;  // symmetric mirrors the edge pixel too; reflect mirrors about it
  int left = before, right = after;
  while (left > 0 || right > 0) {
    const int old_length = total - right - left - (symmetric ? 0 : 1);
    if (left > 0) {
      const int chunk = std::min(old_length, left);
      const int stop = left - edge;  // the chunk is m[stop + chunk], ..., m[stop + 1] (numpy's slice, step -1)
      for (int t = 0; t < chunk; ++t) m[left - chunk + t] = m[stop + chunk - t];
      left -= chunk;
    }
    if (right > 0) {
      const int chunk = std::min(old_length, right);
      const int start = total - right + edge - 2;  // m[start], m[start - 1], ...
      for (int t = 0; t < chunk; ++t) m[total - right + t] = m[start - t];
      right -= chunk;
    }
  }
}

}  // namespace

void pad_axis_map(int n, int before, int after, PadMode mode, std::vector<int>* map) {
  std::vector<int>& m = *map;
  m.resize(static_cast<size_t>(before) + n + after);
  for (int i = 0; i < static_cast<int>(m.size()); ++i) {
    const int k = i - before;
    if (k >= 0 && k < n) m[i] = k;
    else if (mode == PadMode::kConstant) m[i] = -1;
    else m[i] = std::clamp(k, 0, n - 1);  // edge; also numpy's reflect/symmetric of a one-pixel axis
  }
  if ((mode == PadMode::kReflect || mode == PadMode::kSymmetric) && n > 1) {
    reflect_both(m, before, after, mode == PadMode::kSymmetric);
  }
}

void pad_axis_map_again(int before, int after, PadMode mode, std::vector<int>* map) {
  thread_local std::vector<int> outer, first;
  pad_axis_map(static_cast<int>(map->size()), before, after, mode, &outer);
  first.assign(map->begin(), map->end());
  map->resize(outer.size());
  for (size_t i = 0; i < outer.size(); ++i) (*map)[i] = outer[i] < 0 ? -1 : first[outer[i]];
}

void remap_image(const RgbImage& src, std::span<const int> xs, std::span<const int> ys, const Fill& fill,
                 RgbImage* dst) {
  dst->width = static_cast<int>(xs.size());
  dst->height = static_cast<int>(ys.size());
  dst->pixels.resize(xs.size() * ys.size() * 3);
  // Columns [run_begin, run_end) map to consecutive source columns: one memcpy per row for them.
  size_t run_begin = 0;
  while (run_begin < xs.size() && xs[run_begin] < 0) ++run_begin;
  size_t run_end = run_begin;
  while (run_end < xs.size() && xs[run_end] == xs[run_begin] + static_cast<int>(run_end - run_begin)) ++run_end;
  for (size_t y = 0; y < ys.size(); ++y) {
    uint8_t* o = dst->pixels.data() + y * xs.size() * 3;
    if (ys[y] < 0) {
      for (size_t x = 0; x < xs.size(); ++x) std::memcpy(o + 3 * x, fill.rgb, 3);
      continue;
    }
    const uint8_t* row = src.row(ys[y]);
    for (size_t x = 0; x < xs.size(); ++x) {
      if (x == run_begin && run_end > run_begin) {
        std::memcpy(o + 3 * x, row + static_cast<size_t>(xs[x]) * 3, (run_end - run_begin) * 3);
        x = run_end - 1;
        continue;
      }
      std::memcpy(o + 3 * x, xs[x] < 0 ? fill.rgb : row + static_cast<size_t>(xs[x]) * 3, 3);
    }
  }
}

void pad_image(const RgbImage& src, const Padding& p, PadMode mode, const Fill& fill, RgbImage* dst) {
  thread_local std::vector<int> xs, ys;
  pad_axis_map(src.width, p.left, p.right, mode, &xs);
  pad_axis_map(src.height, p.top, p.bottom, mode, &ys);
  remap_image(src, xs, ys, fill, dst);
}

}  // namespace batchd::daemon::geometry
