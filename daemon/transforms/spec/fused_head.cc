#include "transforms/spec/fused_head.h"

#include <optional>

#include "transforms/kernels/crop_resize.h"
#include "transforms/kernels/image_decoder.h"
#include "transforms/ops/weighted_choice.h"

namespace batchd::daemon {

namespace {

using ops::Sample;
using ops::SampleKernel;

// One crop the head can make: a random_resized_crop (scale, ratio drawn per sample) or resize + center_crop.
struct CropOption {
  CropSpec spec;
  std::vector<double> scale, ratio;  // random_resized_crop's
};

// decode + a crop option (or a random_choice between several), as one CropResizer step.
class FusedCropKernel final : public SampleKernel {
 public:
  FusedCropKernel(std::unique_ptr<ImageDecoder> decoder, std::vector<CropOption> options,
                  std::optional<ops::WeightedChoice> choice, bool exact, StageTimes* times)
      : decoder_(std::move(decoder)), options_(std::move(options)), choice_(std::move(choice)),
        mode_(exact ? DecodeMode::kExact : DecodeMode::kFastRegion), times_(times) {}

  Status run(Sample& s, SampleRng& rng) override {
    auto header = decoder_->header(s.bytes, *s.name);
    if (!header.ok()) return header.error();
    // The draws in torchvision's order: RandomChoice's pick, then the chosen crop's box.
    const CropOption& option = choice_ ? options_[choice_->draw(rng)] : options_[0];
    CropSpec spec = option.spec;
    if (!spec.center) {
      spec.box = random_resized_crop_params(header->width, header->height, rng, option.scale[0], option.scale[1],
                                            option.ratio[0], option.ratio[1]);
    }
    s.image.width = s.image.height = spec.crop;
    s.image.pixels.resize(static_cast<size_t>(spec.crop) * spec.crop * 3);
    return resizer_.run(s.bytes, *s.name, *header, spec, mode_, s.image.pixels.data(), times_);
  }

 private:
  std::unique_ptr<ImageDecoder> decoder_;
  CropResizer resizer_{decoder_.get()};
  std::vector<CropOption> options_;
  std::optional<ops::WeightedChoice> choice_;
  DecodeMode mode_;
  StageTimes* times_;
};

// Bilinear or bicubic (the filters CropResizer runs), to a square.
bool square_filter(const wire::Op& op, ResampleFilter* filter) {
  const auto size = ops::numbers(op, "size");
  const std::string& name = ops::text(op, "interpolation");
  if (name != "bilinear" && name != "bicubic") return false;
  *filter = name == "bicubic" ? ResampleFilter::kBicubic : ResampleFilter::kBilinear;
  return size.size() == 1 || size[0] == size[1];
}

std::optional<CropOption> random_resized_crop_option(const wire::Op& op) {
  CropOption option;
  if (op.name() != "random_resized_crop" || !square_filter(op, &option.spec.filter)) return std::nullopt;
  option.spec.crop = static_cast<int>(ops::numbers(op, "size")[0]);
  option.scale = ops::numbers(op, "scale");
  option.ratio = ops::numbers(op, "ratio");
  return option;
}

// What the head replaces of a spec: its crop options (several: a random_choice between them) and how many ops.
struct Head {
  std::vector<CropOption> options;
  std::optional<ops::WeightedChoice> choice;
  int used = 0;  // 0: no head
};

// The head of ops[0..] (ops[0] is decode), if ops[1..] fit one.
Head head_of(const google::protobuf::RepeatedPtrField<wire::Op>& o) {
  Head head;
  if (auto option = random_resized_crop_option(o[1])) {
    head.options = {*option};
    head.used = 2;
    return head;
  }
  if (o[1].name() == "random_choice") {  // every alternative a crop of one size
    for (const auto& op : ops::param(o[1], "ops")->ops().ops()) {
      auto option = random_resized_crop_option(op);
      if (!option || (!head.options.empty() && option->spec.crop != head.options[0].spec.crop)) return {};
      head.options.push_back(*option);
    }
    if (head.options.empty()) return {};  // the plan refuses it; never a head without options
    head.choice.emplace(ops::numbers(o[1], "p"), head.options.size());
    head.used = 2;
    return head;
  }
  CropOption center;
  if (o.size() >= 3 && o[1].name() == "resize" && o[2].name() == "center_crop" &&
      square_filter(o[1], &center.spec.filter) && ops::numbers(o[1], "size").size() == 1 &&
      !ops::has(o[1], "max_size") && ops::numbers(o[2], "size").size() == 1 &&
      ops::numbers(o[2], "size")[0] <= ops::numbers(o[1], "size")[0]) {
    center.spec.center = true;
    center.spec.resize = static_cast<int>(ops::numbers(o[1], "size")[0]);
    center.spec.crop = static_cast<int>(ops::numbers(o[2], "size")[0]);
    head.options = {center};
    head.used = 3;
  }
  return head;
}

}  // namespace

Result<std::unique_ptr<SampleKernel>> fused_head(const wire::PipelineSpec& spec, StageTimes* times, int* used) {
  *used = 0;
  const auto& o = spec.ops();
  if (o.size() < 2 || ops::number(o[0], "max_side") != 0) return std::unique_ptr<SampleKernel>();
  Head head = head_of(o);
  if (head.used == 0) return std::unique_ptr<SampleKernel>();
  auto decoder = ImageDecoder::create();
  if (!decoder.ok()) return decoder.error();
  *used = head.used;
  return std::unique_ptr<SampleKernel>(new FusedCropKernel(std::move(decoder).value(), std::move(head.options),
                                                           std::move(head.choice), ops::flag(o[0], "exact_decode"),
                                                           times));
}

}  // namespace batchd::daemon
