#include "transforms/fused_head.h"

#include "transforms/crop_resize.h"
#include "transforms/image_decoder.h"

namespace batchd::daemon {

namespace {

using ops::Sample;
using ops::SampleKernel;

// decode + random_resized_crop, or decode + resize + center_crop, as one CropResizer step.
class FusedCropKernel final : public SampleKernel {
 public:
  FusedCropKernel(std::unique_ptr<ImageDecoder> decoder, CropSpec spec, std::vector<double> scale,
                  std::vector<double> ratio, bool exact, StageTimes* times)
      : decoder_(std::move(decoder)), spec_(spec), scale_(std::move(scale)), ratio_(std::move(ratio)),
        mode_(exact ? DecodeMode::kExact : DecodeMode::kFastRegion), times_(times) {}

  Status run(Sample& s, SampleRng& rng) override {
    auto header = decoder_->header(s.bytes, *s.name);
    if (!header.ok()) return header.error();
    CropSpec spec = spec_;
    if (!spec.center) {
      spec.box = random_resized_crop_params(header->width, header->height, rng, scale_[0], scale_[1], ratio_[0],
                                            ratio_[1]);
    }
    s.image.width = s.image.height = spec.crop;
    s.image.pixels.resize(static_cast<size_t>(spec.crop) * spec.crop * 3);
    return resizer_.run(s.bytes, *s.name, *header, spec, mode_, s.image.pixels.data(), times_);
  }

 private:
  std::unique_ptr<ImageDecoder> decoder_;
  CropResizer resizer_{decoder_.get()};
  CropSpec spec_;
  std::vector<double> scale_, ratio_;
  DecodeMode mode_;
  StageTimes* times_;
};

bool bilinear_square(const wire::Op& op) {
  const auto size = ops::numbers(op, "size");
  return ops::text(op, "interpolation") == "bilinear" && (size.size() == 1 || size[0] == size[1]);
}

}  // namespace

Result<std::unique_ptr<SampleKernel>> fused_head(const wire::PipelineSpec& spec, StageTimes* times, int* used) {
  *used = 0;
  const auto& o = spec.ops();
  if (o.size() < 2 || ops::number(o[0], "max_side") != 0) return std::unique_ptr<SampleKernel>();
  CropSpec crop;
  std::vector<double> scale, ratio;
  if (o[1].name() == "random_resized_crop" && bilinear_square(o[1])) {
    crop.crop = static_cast<int>(ops::numbers(o[1], "size")[0]);
    scale = ops::numbers(o[1], "scale");
    ratio = ops::numbers(o[1], "ratio");
    *used = 2;
  } else if (o.size() >= 3 && o[1].name() == "resize" && o[2].name() == "center_crop" && bilinear_square(o[1]) &&
             ops::numbers(o[1], "size").size() == 1 && !ops::has(o[1], "max_size") &&
             ops::numbers(o[2], "size").size() == 1 &&
             ops::numbers(o[2], "size")[0] <= ops::numbers(o[1], "size")[0]) {
    crop.center = true;
    crop.resize = static_cast<int>(ops::numbers(o[1], "size")[0]);
    crop.crop = static_cast<int>(ops::numbers(o[2], "size")[0]);
    *used = 3;
  } else {
    return std::unique_ptr<SampleKernel>();
  }
  auto decoder = ImageDecoder::create();
  if (!decoder.ok()) return decoder.error();
  return std::unique_ptr<SampleKernel>(new FusedCropKernel(std::move(decoder).value(), crop, scale, ratio,
                                                           ops::flag(o[0], "exact_decode"), times));
}

}  // namespace batchd::daemon
