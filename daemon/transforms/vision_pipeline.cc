#include "transforms/vision_pipeline.h"

#include <array>
#include <chrono>

#include "transforms/crop_resize.h"
#include "transforms/image_decoder.h"
#include "transforms/vision_transforms.h"

namespace batchd::daemon {

namespace {

using Clock = std::chrono::steady_clock;

class VisionPipeline final : public Pipeline {
 public:
  VisionPipeline(VisionMode mode, bool normalize, std::shared_ptr<const Dataset> dataset,
                 const wire::VisionOptions& options, std::unique_ptr<ImageDecoder> decoder)
      : mode_(mode), normalize_(normalize), dataset_(std::move(dataset)), images_(*dataset_->images()),
        options_(options), decoder_(std::move(decoder)) {
    const int64_t c = options.crop_size();
    tensors_ = {{"image", normalize ? wire::FLOAT32 : wire::UINT8, {3, c, c}}, {"label", wire::INT64, {}}};
    for (int ch = 0; ch < 3; ++ch) {
      for (int v = 0; v < 256; ++v) lut_[ch][v] = (static_cast<float>(v) / 255.0f - kImagenetMean[ch]) / kImagenetStd[ch];
    }
    rgb_.resize(static_cast<size_t>(c) * c * 3);
  }

  const std::vector<TensorDesc>& tensors() const override { return tensors_; }

  StageTimes take_stage_times() override { return std::exchange(times_, StageTimes{}); }

  Status run(std::span<const int64_t> indices, char* slot, std::span<const uint64_t> offsets,
             const BatchContext& context) override {
    const int c = static_cast<int>(options_.crop_size());
    const size_t plane = static_cast<size_t>(c) * c;
    auto* labels = reinterpret_cast<int64_t*>(slot + offsets[1]);
    for (size_t i = 0; i < indices.size(); ++i) {
      const int64_t idx = indices[i];
      if (idx < 0 || static_cast<uint64_t>(idx) >= dataset_->size()) {
        return Error(ErrorCode::kInternal, "sample index " + std::to_string(idx) + " out of range");
      }
      context.progress.at(idx);
      bool flip = false;
      BATCHD_RETURN_IF_ERROR(make_sample(static_cast<uint64_t>(idx), context, &flip, &labels[i]));
      auto t = Clock::now();
      if (normalize_) {
        float* dst = reinterpret_cast<float*>(slot + offsets[0]) + i * 3 * plane;
        write_chw(dst, flip, [this](int ch, uint8_t v) { return lut_[ch][v]; });
      } else {
        uint8_t* dst = reinterpret_cast<uint8_t*>(slot + offsets[0]) + i * 3 * plane;
        write_chw(dst, flip, [](int, uint8_t v) { return v; });
      }
      times_.normalize_ns += stage_ns(t);
    }
    return ok_status();
  }

 private:
  // Read, decode, crop/resize sample `idx` into rgb_ (crop x crop x 3, HWC); decide the flip; read the label.
  Status make_sample(uint64_t idx, const BatchContext& context, bool* flip, int64_t* label) {
    auto t = Clock::now();
    BATCHD_RETURN_IF_ERROR(images_.read_image(idx, &bytes_, label));
    times_.read_ns += stage_ns(t);
    images_.sample_name(idx, &name_);  // names the sample in decode errors
    const std::string& path = name_;
    auto header = decoder_->header(bytes_, path);
    if (!header.ok()) return header.error();
    CropSpec spec;
    spec.crop = static_cast<int>(options_.crop_size());
    if (mode_ == VisionMode::kTrain) {
      SampleRng rng(context.seed, context.epoch, static_cast<int64_t>(idx));
      spec.box = random_resized_crop_params(header->width, header->height, rng);
      *flip = rng.uniform(0.0, 1.0) < 0.5;
    } else {
      spec.center = true;
      spec.resize = static_cast<int>(options_.resize_size());
    }
    times_.decode_ns += stage_ns(t);
    return resizer_.run(bytes_, path, *header, spec,
                        options_.exact_decode() ? DecodeMode::kExact : DecodeMode::kFastRegion, rgb_.data(), &times_);
  }

  // rgb_ (HWC) -> dst (CHW), mirrored if `flip`, each value through `f(channel, value)`; one pass over each row.
  template <typename T, typename F>
  void write_chw(T* dst, bool flip, F f) const {
    const int c = static_cast<int>(options_.crop_size());
    const size_t plane = static_cast<size_t>(c) * c;
    for (int y = 0; y < c; ++y) {
      const uint8_t* row = rgb_.data() + static_cast<size_t>(y) * c * 3;
      T* r = dst + static_cast<size_t>(y) * c;
      T* g = r + plane;
      T* b = g + plane;
      if (flip) {
        for (int x = 0; x < c; ++x) {
          r[c - 1 - x] = f(0, row[3 * x]);
          g[c - 1 - x] = f(1, row[3 * x + 1]);
          b[c - 1 - x] = f(2, row[3 * x + 2]);
        }
      } else {
        for (int x = 0; x < c; ++x) {
          r[x] = f(0, row[3 * x]);
          g[x] = f(1, row[3 * x + 1]);
          b[x] = f(2, row[3 * x + 2]);
        }
      }
    }
  }

  VisionMode mode_;
  bool normalize_;
  std::shared_ptr<const Dataset> dataset_;  // keeps images_ alive
  const ImageSamples& images_;
  wire::VisionOptions options_;
  std::unique_ptr<ImageDecoder> decoder_;
  CropResizer resizer_{decoder_.get()};
  std::vector<TensorDesc> tensors_;
  std::array<std::array<float, 256>, 3> lut_{};
  std::vector<uint8_t> bytes_, rgb_;
  std::string name_;  // the current sample's name, its capacity reused
  StageTimes times_;
};

}  // namespace

Result<wire::VisionOptions> resolve_vision_options(VisionMode mode, const wire::VisionOptions& requested) {
  wire::VisionOptions o = requested;
  if (o.crop_size() == 0) o.set_crop_size(kDefaultCropSize);
  if (o.resize_size() == 0) o.set_resize_size(kDefaultResizeSize);
  if (o.crop_size() < 8 || o.crop_size() > 4096) {
    return Error(ErrorCode::kInvalidArgument, "crop_size " + std::to_string(o.crop_size()) +
                                                  " is out of range [8, 4096]");
  }
  if (mode == VisionMode::kVal && (o.resize_size() < o.crop_size() || o.resize_size() > 8192)) {
    return Error(ErrorCode::kInvalidArgument, "resize_size " + std::to_string(o.resize_size()) +
                                                  " must be at least crop_size (" + std::to_string(o.crop_size()) +
                                                  ") and at most 8192");
  }
  if (mode == VisionMode::kTrain) o.clear_resize_size();  // unused by RandomResizedCrop: not part of the stream
  return o;
}

Result<std::unique_ptr<Pipeline>> make_vision_pipeline(VisionMode mode, bool normalize,
                                                       std::shared_ptr<const Dataset> dataset,
                                                       const wire::VisionOptions& options) {
  if (dataset->images() == nullptr) {
    return Error(ErrorCode::kInvalidArgument, "the vision pipelines (train224, train224_u8, val224) need an image "
                                              "dataset (imagefolder or webdataset); '" + dataset->name() + "' is " +
                                                  dataset->format());
  }
  auto resolved = resolve_vision_options(mode, options);  // idempotent: a resolved message passes unchanged
  if (!resolved.ok()) return resolved.error();
  auto decoder = ImageDecoder::create();
  if (!decoder.ok()) return decoder.error();
  return std::unique_ptr<Pipeline>(
      new VisionPipeline(mode, normalize, std::move(dataset), *resolved, std::move(decoder).value()));
}

}  // namespace batchd::daemon
