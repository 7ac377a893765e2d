// crop_resize.h — one image sample of train224/val224 from its file's bytes: decode (the whole image, or only the
// window the crop reads), crop and resize with Pillow's antialiased bilinear (or bicubic) filter, into a crop x crop
// RGB image.
//
// The geometry is torchvision's: train crops `box` (RandomResizedCrop's, in the image's pixels) and resizes it to
// crop x crop; val resizes the shorter side to `resize` and takes the central crop x crop. With a fast decode the
// JPEG is DCT-scaled as far as the crop allows (ImageDecoder::choose_scale) and only the window the resize reads is
// decoded; the box is mapped onto the scaled image with fractional edges, as Pillow's resize(box=) does.
// One per worker and stream (it reuses its buffers); not thread-safe. The decoder is borrowed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "batchd/result.h"
#include "transforms/kernels/image_decoder.h"
#include "transforms/presets/pipeline.h"
#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon {

struct CropSpec {
  bool center = false;  // val: Resize(resize) + CenterCrop(crop); else train: crop `box`, resize to crop x crop
  CropBox box;          // train: inside the image (left >= 0, width >= 1, left + width <= image width; same for y)
  int crop = 224;       // >= 1
  int resize = 256;     // val: >= crop
  ResampleFilter filter = ResampleFilter::kBilinear;  // kBilinear or kBicubic (Pillow's, antialiased)
};

enum class DecodeMode {
  kExact,       // the whole image as PIL decodes it (accurate IDCT, fancy upsampling); Pillow's resample order
  kFastRegion,  // DCT-scaled, fast IDCT and upsampling, only the window the resize reads; ResampleOrder::kFast
  kFastWhole,   // kFastRegion's decode of the whole image: the same output (the reference tests compare with)
};

class CropResizer final {
 public:
  explicit CropResizer(ImageDecoder* decoder) : decoder_(decoder) {}

  // Decodes `bytes` (header as ImageDecoder::header() read it; `path` names the file in errors) and writes the
  // crop x crop x 3 (HWC) result to `rgb`. Adds the decode and resize time to *times when it is not null.
  // Errors: the decoder's (kDataError naming `path`).
  Status run(std::span<const uint8_t> bytes, const std::string& path, const ImageHeader& header,
             const CropSpec& spec, DecodeMode mode, uint8_t* rgb, StageTimes* times = nullptr);

 private:
  ImageDecoder* decoder_;
  RgbImage image_;
  std::vector<uint8_t> scratch_;
};

}  // namespace batchd::daemon
