// geometry_kernels.h — the kernels of the geometry family (geometry_ops.cc): whole-image versions, used when the
// spec cannot take the fused decode+crop+resize path (spec_pipeline.h). Each works on Sample.image, writing
// Sample.spare and swapping when it cannot work in place; buffers are reused from sample to sample. The image
// functions are transforms/kernels/geometry/*.h (torchvision 0.14 / Pillow 9.4, exact).
#pragma once

#include <memory>
#include <utility>

#include "transforms/ops/op.h"

namespace batchd::daemon::ops {

// torchvision's output size of resize(op) for a width x height image: [h, w] as given; n: the shorter side n, the
// longer int(n * long / short), then capped by max_size (torchvision 0.14 _compute_resized_output_size).
std::pair<int, int> resized_size(int width, int height, const wire::Op& op);  // (width, height)

// RandomCrop's padded size of a width x height image (padding, then pad_if_needed's), for the plan.
std::pair<int, int> random_crop_padded_size(int width, int height, const wire::Op& op);  // (width, height)

Result<std::unique_ptr<SampleKernel>> make_decode_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_resize_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_center_crop_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_random_crop_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_random_resized_crop_kernel(const wire::Op& op);
Result<std::unique_ptr<SampleKernel>> make_flip_kernel(bool horizontal, double p);

// Mirrors `image` left-right (horizontal) or top-bottom, in place.
void flip_image(RgbImage& image, bool horizontal);

}  // namespace batchd::daemon::ops
