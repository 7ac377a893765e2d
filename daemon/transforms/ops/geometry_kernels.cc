#include "transforms/ops/geometry_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "transforms/image_decoder.h"

namespace batchd::daemon::ops {

std::pair<int, int> resized_size(int width, int height, const wire::Op& op) {
  const auto size = numbers(op, "size");
  if (size.size() == 2) return {static_cast<int>(size[1]), static_cast<int>(size[0])};
  int w = 0, h = 0;
  resize_shorter_side(width, height, static_cast<int>(size[0]), &w, &h);
  if (has(op, "max_size")) {
    const int max_size = static_cast<int>(number(op, "max_size"));
    const int lng = std::max(w, h), shrt = std::min(w, h);
    if (lng > max_size) {
      const int new_short = static_cast<int>(static_cast<int64_t>(max_size) * shrt / lng);
      if (w <= h) { w = new_short; h = max_size; } else { h = new_short; w = max_size; }
    }
  }
  return {w, h};
}

void resize_box(const RgbImage& src, double x0, double y0, double x1, double y1, int out_w, int out_h, RgbImage* dst,
                std::vector<uint8_t>* scratch) {
  dst->width = out_w;
  dst->height = out_h;
  dst->pixels.resize(static_cast<size_t>(out_w) * out_h * 3);
  const ResampleAxis ax{src.width, x0, x1, out_w, 0, out_w};
  const ResampleAxis ay{src.height, y0, y1, out_h, 0, out_h};
  resample_bilinear(src, 0, 0, ax, ay, dst->pixels.data(), scratch, ResampleOrder::kPillow);
}

void flip_image(RgbImage& image, bool horizontal) {
  const int w = image.width, h = image.height;
  const size_t row = static_cast<size_t>(w) * 3;
  if (horizontal) {
    for (int y = 0; y < h; ++y) {
      uint8_t* r = image.pixels.data() + y * row;
      for (int a = 0, b = w - 1; a < b; ++a, --b) {
        for (int c = 0; c < 3; ++c) std::swap(r[3 * a + c], r[3 * b + c]);
      }
    }
  } else {
    for (int a = 0, b = h - 1; a < b; ++a, --b) {
      std::swap_ranges(image.pixels.data() + a * row, image.pixels.data() + (a + 1) * row,
                       image.pixels.data() + b * row);
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
    resize_box(s.spare, 0, 0, s.spare.width, s.spare.height, ow, oh, &s.image, &scratch_);
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
  explicit ResizeKernel(wire::Op op) : op_(std::move(op)) {}
  Status run(Sample& s, SampleRng&) override {
    const auto [w, h] = resized_size(s.image.width, s.image.height, op_);
    if (w == s.image.width && h == s.image.height) return ok_status();  // torchvision returns the image as it is
    resize_box(s.image, 0, 0, s.image.width, s.image.height, w, h, &s.spare, &scratch_);
    std::swap(s.image, s.spare);
    return ok_status();
  }

 private:
  wire::Op op_;
  std::vector<uint8_t> scratch_;
};

class CenterCropKernel final : public SampleKernel {
 public:
  CenterCropKernel(int h, int w) : h_(h), w_(w) {}
  Status run(Sample& s, SampleRng&) override {
    // torchvision pads a smaller image with 0 on each side ((crop - in) // 2 before, the rest after) then crops.
    const int top = s.image.height >= h_ ? center_crop_offset(s.image.height, h_) : -((h_ - s.image.height) / 2);
    const int left = s.image.width >= w_ ? center_crop_offset(s.image.width, w_) : -((w_ - s.image.width) / 2);
    s.spare.width = w_;
    s.spare.height = h_;
    s.spare.pixels.assign(static_cast<size_t>(w_) * h_ * 3, 0);
    const int x0 = std::max(0, left), x1 = std::min(s.image.width, left + w_);
    for (int y = std::max(0, top); y < std::min(s.image.height, top + h_); ++y) {
      if (x1 <= x0) break;
      std::memcpy(s.spare.pixels.data() + (static_cast<size_t>(y - top) * w_ + (x0 - left)) * 3,
                  s.image.row(y) + static_cast<size_t>(x0) * 3, static_cast<size_t>(x1 - x0) * 3);
    }
    std::swap(s.image, s.spare);
    return ok_status();
  }

 private:
  int h_, w_;
};

class RandomResizedCropKernel final : public SampleKernel {
 public:
  explicit RandomResizedCropKernel(const wire::Op& op)
      : scale_(numbers(op, "scale")), ratio_(numbers(op, "ratio")) {
    const auto size = numbers(op, "size");
    h_ = static_cast<int>(size[0]);
    w_ = static_cast<int>(size.size() == 2 ? size[1] : size[0]);
  }
  Status run(Sample& s, SampleRng& rng) override {
    const CropBox box =
        random_resized_crop_params(s.image.width, s.image.height, rng, scale_[0], scale_[1], ratio_[0], ratio_[1]);
    resize_box(s.image, box.left, box.top, box.left + box.width, box.top + box.height, w_, h_, &s.spare, &scratch_);
    std::swap(s.image, s.spare);
    return ok_status();
  }

 private:
  std::vector<double> scale_, ratio_;
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
