// geometry_kernels.h — the kernels of the geometry family (geometry_ops.cc): whole-image versions, used when the
// spec cannot take the fused decode+crop+resize path (spec_pipeline.h). Each works on Sample.image, writing
// Sample.spare and swapping when it cannot work in place; buffers are reused from sample to sample.
#pragma once

#include <memory>
#include <utility>

#include "transforms/ops/op.h"

namespace batchd::daemon::ops {

// torchvision's output size of resize(op) for a width x height image: [h, w] as given; n: the shorter side n, the
// longer int(n * long / short), then capped by max_size (torchvision 0.14 _compute_resized_output_size).
std::pair<int, int> resized_size(int width, int height, const wire::Op& op);  // (width, height)

Result<std::unique_ptr<SampleKernel>> make_decode_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_resize_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_center_crop_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_random_resized_crop_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_flip_kernel(bool horizontal, double p);

// Mirrors `image` left-right (horizontal) or top-bottom, in place.
void flip_image(RgbImage& image, bool horizontal);

// Pillow's bilinear resize of the box [x0, x1) x [y0, y1) of `src` to out_w x out_h into *dst (resized, reused).
void resize_box(const RgbImage& src, double x0, double y0, double x1, double y1, int out_w, int out_h, RgbImage* dst,
                std::vector<uint8_t>* scratch);

}  // namespace batchd::daemon::ops
