#include "transforms/ops/geometry_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "transforms/kernels/geometry/crop.h"
#include "transforms/kernels/geometry/random_crop.h"
#include "transforms/kernels/geometry/resize.h"
#include "transforms/kernels/image_decoder.h"

namespace batchd::daemon::ops {

namespace {

// An op's size parameter as torchvision's list: [n] or [h, w].
std::vector<int> size_of(const wire::Op& op) {
  std::vector<int> out;
  for (double v : numbers(op, "size")) out.push_back(static_cast<int>(v));
  return out;
}

ResampleFilter filter_of(const wire::Op& op) {
  ResampleFilter f = ResampleFilter::kBilinear;
  geometry::parse_filter(text(op, "interpolation"), &f);  // the schema allows only the three names
  return f;
}

geometry::RandomCropParams random_crop_params(const wire::Op& op) {
  geometry::RandomCropParams p;
  const std::vector<int> size = size_of(op);
  p.height = size[0];
  p.width = size.size() == 2 ? size[1] : size[0];
  if (has(op, "padding")) {
    std::vector<int> padding;
    for (double v : numbers(op, "padding")) padding.push_back(static_cast<int>(v));
    p.padding = geometry::padding_from(padding);
  }
  p.pad_if_needed = flag(op, "pad_if_needed");
  p.fill = geometry::fill_from(numbers(op, "fill"));
  geometry::parse_pad_mode(text(op, "padding_mode"), &p.mode);  // the schema allows only the four names
  return p;
}

}  // namespace

std::pair<int, int> resized_size(int width, int height, const wire::Op& op) {
  const int max_size = has(op, "max_size") ? static_cast<int>(number(op, "max_size")) : 0;
  const geometry::Size2 s = geometry::resized_output_size(width, height, size_of(op), max_size);
  return {s.width, s.height};
}

std::pair<int, int> random_crop_padded_size(int width, int height, const wire::Op& op) {
  const geometry::PaddedSize s = geometry::random_crop_padded_size(width, height, random_crop_params(op));
  return {s.width, s.height};
}

void flip_image(RgbImage& image, bool horizontal) {
  if (!horizontal) {
    geometry::flip_vertical(&image);
    return;
  }
  const int w = image.width, h = image.height;
  const size_t row = static_cast<size_t>(w) * 3;
  for (int y = 0; y < h; ++y) {
    uint8_t* r = image.pixels.data() + y * row;
    for (int a = 0, b = w - 1; a < b; ++a, --b) {
      for (int c = 0; c < 3; ++c) std::swap(r[3 * a + c], r[3 * b + c]);
    }
  }
}

namespace {

class DecodeKernel final : public SampleKernel {
 public:
  DecodeKernel(std::unique_ptr<ImageDecoder> decoder, bool exact, int max_side)
      : decoder_(std::move(decoder)), exact_(exact), max_side_(max_side) {}

  Status run(Sample& s, SampleRng&) override {
    auto header = decoder_->header(s.bytes, *s.name);
    if (!header.ok()) return header.error();
    if (max_side_ <= 0 || std::max(header->width, header->height) <= max_side_) {
      return decoder_->decode(s.bytes, *s.name, *header, Scale{}, &s.image, !exact_);
    }
    // The longer side becomes max_side (PIL bilinear); a fast decode first shrinks in the DCT domain as far as it
    // stays at least that large.
    const double f = static_cast<double>(max_side_) / std::max(header->width, header->height);
    const int ow = std::max(1, static_cast<int>(std::lround(header->width * f)));
    const int oh = std::max(1, static_cast<int>(std::lround(header->height * f)));
    const Scale scale = exact_ ? Scale{} : decoder_->choose_scale(*header, header->width, header->height, ow, oh);
    BATCHD_RETURN_IF_ERROR(decoder_->decode(s.bytes, *s.name, *header, scale, &s.spare, !exact_));
    geometry::resize_image(s.spare, ow, oh, ResampleFilter::kBilinear, &s.image, &scratch_);
    return ok_status();
  }

 private:
  std::unique_ptr<ImageDecoder> decoder_;
  bool exact_;
  int max_side_;
  std::vector<uint8_t> scratch_;
};

class ResizeKernel final : public SampleKernel {
 public:
  explicit ResizeKernel(const wire::Op& op)
      : size_(size_of(op)), max_size_(has(op, "max_size") ? static_cast<int>(number(op, "max_size")) : 0),
        filter_(filter_of(op)) {}
  Status run(Sample& s, SampleRng&) override {
    const geometry::Size2 out = geometry::resized_output_size(s.image.width, s.image.height, size_, max_size_);
    if (out == geometry::Size2{s.image.width, s.image.height}) return ok_status();  // torchvision returns it as is
    if (out.width > kMaxImageSide || out.height > kMaxImageSide ||
        int64_t{out.width} * out.height > kMaxImagePixels) {  // the plan bounds fixed sizes; this, the image's own
      return Error(ErrorCode::kDataError,
                   "resize of a " + std::to_string(s.image.width) + " x " + std::to_string(s.image.height) +
                       " image would make " + std::to_string(out.width) + " x " + std::to_string(out.height) +
                       ", larger than batchd holds (" + std::to_string(kMaxImageSide) + " a side, 2^28 pixels): give "
                       "resize a max_size, or [h, w]");
    }
    geometry::resize_image(s.image, out.width, out.height, filter_, &s.spare, &scratch_);
    std::swap(s.image, s.spare);
    return ok_status();
  }

 private:
  std::vector<int> size_;
  int max_size_;
  ResampleFilter filter_;
  std::vector<uint8_t> scratch_;
};

class CenterCropKernel final : public SampleKernel {
 public:
  CenterCropKernel(int h, int w) : h_(h), w_(w) {}
  Status run(Sample& s, SampleRng&) override {
    geometry::center_crop(s.image, w_, h_, &s.spare);  // pads with 0 where the crop is larger, as torchvision
    std::swap(s.image, s.spare);
    return ok_status();
  }

 private:
  int h_, w_;
};

class RandomCropKernel final : public SampleKernel {
 public:
  explicit RandomCropKernel(const wire::Op& op) : params_(random_crop_params(op)) {}
  Status run(Sample& s, SampleRng& rng) override {
    const Status done = geometry::random_crop(s.image, params_, rng, &s.spare);
    if (!done.ok()) return Error(ErrorCode::kDataError, *s.name + ": " + done.error().message());
    std::swap(s.image, s.spare);
    return ok_status();
  }

 private:
  geometry::RandomCropParams params_;
};

class RandomResizedCropKernel final : public SampleKernel {
 public:
  explicit RandomResizedCropKernel(const wire::Op& op)
      : scale_(numbers(op, "scale")), ratio_(numbers(op, "ratio")), filter_(filter_of(op)) {
    const std::vector<int> size = size_of(op);
    h_ = size[0];
    w_ = size.size() == 2 ? size[1] : size[0];
  }
  Status run(Sample& s, SampleRng& rng) override {
    // Crop, then resize the crop: its edges bound the filter, as PIL's crop-then-resize (F.resized_crop).
    geometry::random_resized_crop(s.image, w_, h_, scale_.data(), ratio_.data(), filter_, rng, &s.spare, &scratch_);
    std::swap(s.image, s.spare);
    return ok_status();
  }

 private:
  std::vector<double> scale_, ratio_;
  ResampleFilter filter_;
  int h_ = 0, w_ = 0;
  std::vector<uint8_t> scratch_;
};

class FlipKernel final : public SampleKernel {
 public:
  FlipKernel(bool horizontal, double p) : horizontal_(horizontal), p_(p) {}
  Status run(Sample& s, SampleRng& rng) override {
    if (rng.uniform(0.0, 1.0) < p_) flip_image(s.image, horizontal_);  // torch.rand(1) < p
    return ok_status();
  }

 private:
  bool horizontal_;
  double p_;
};

}  // namespace

Result<std::unique_ptr<SampleKernel>> make_decode_kernel(const wire::Op& op) {
  auto decoder = ImageDecoder::create();
  if (!decoder.ok()) return decoder.error();
  return std::unique_ptr<SampleKernel>(new DecodeKernel(std::move(decoder).value(), flag(op, "exact_decode"),
                                                        static_cast<int>(number(op, "max_side"))));
}

Result<std::unique_ptr<SampleKernel>> make_resize_kernel(const wire::Op& op) {
  return std::unique_ptr<SampleKernel>(new ResizeKernel(op));
}

Result<std::unique_ptr<SampleKernel>> make_random_crop_kernel(const wire::Op& op) {
  return std::unique_ptr<SampleKernel>(new RandomCropKernel(op));
}

Result<std::unique_ptr<SampleKernel>> make_center_crop_kernel(const wire::Op& op) {
  const auto size = numbers(op, "size");
  const int h = static_cast<int>(size[0]), w = static_cast<int>(size.size() == 2 ? size[1] : size[0]);
  return std::unique_ptr<SampleKernel>(new CenterCropKernel(h, w));
}

Result<std::unique_ptr<SampleKernel>> make_random_resized_crop_kernel(const wire::Op& op) {
  return std::unique_ptr<SampleKernel>(new RandomResizedCropKernel(op));
}

Result<std::unique_ptr<SampleKernel>> make_flip_kernel(bool horizontal, double p) {
  return std::unique_ptr<SampleKernel>(new FlipKernel(horizontal, p));
}

}  // namespace batchd::daemon::ops
