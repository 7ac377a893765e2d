// image_decoder.h — JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libspng) to 8-bit RGB.
//
// JPEG: baseline and progressive, grayscale (expanded to RGB), CMYK/YCCK (converted to RGB as Pillow does for
// Adobe-inverted CMYK, the common kind), and DCT-domain downscaling (the cheapest way to shrink a JPEG: decode
// fewer coefficients, as PIL's draft mode and NVIDIA DALI do). choose_scale() picks only 1/2, 1/4 and 1/8, the
// factors libjpeg-turbo accelerates; decode() accepts any factor TurboJPEG offers. A truncated JPEG is an error (as in PIL),
// other libjpeg warnings are tolerated. PNG: 8/16-bit, gray, palette, with or without alpha; alpha is dropped and
// 16-bit samples keep their high byte (PIL's convert("RGB") for RGB(A) PNGs).
// One decoder per worker process; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "batchd/result.h"
#include "transforms/kernels/jpeg_region.h"
#include "transforms/kernels/resample.h"

namespace batchd::daemon {

// The largest image batchd holds: decoding refuses larger files (a decompression bomb must not exhaust a worker's
// memory), and no op may make a larger one from a smaller (a resize of a 1 x 32768 image to a shorter side of 4096).
inline constexpr int kMaxImageSide = 32768;
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

enum class ImageFormat { kJpeg, kPng };

struct ImageHeader {
  ImageFormat format;
  int width = 0;
  int height = 0;
  bool cmyk = false;  // a CMYK or YCCK JPEG
};

// A DCT scaling factor num/denom (JPEG only; 1/1 for PNG).
struct Scale {
  int num = 1;
  int denom = 1;
};

// A side of `size` pixels scaled by `s`, rounded up (libjpeg's jdiv_round_up, TurboJPEG's TJSCALED).
inline int scaled_size(int size, Scale s) { return static_cast<int>((int64_t{size} * s.num + s.denom - 1) / s.denom); }

class ImageDecoder final {
 public:
  static Result<std::unique_ptr<ImageDecoder>> create();
  ~ImageDecoder();

  // Reads the dimensions. `path` names the file in errors.
  Result<ImageHeader> header(std::span<const uint8_t> bytes, const std::string& path);

  // The smallest of 1/2, 1/4, 1/8 at which a (crop_w x crop_h) region of the image still spans at least
  // (min_w x min_h) pixels, so that the resize after it still only shrinks. 1/1 for PNG or when none fits.
  Scale choose_scale(const ImageHeader& header, double crop_w, double crop_h, int min_w, int min_h) const;

  // Decodes into *out (capacity reused) at `scale`; out->width/height are the scaled dimensions. `fast`: JPEG with
  // libjpeg-turbo's fast integer IDCT and fast chroma upsampling (slightly different pixels from PIL's decode).
  Status decode(std::span<const uint8_t> bytes, const std::string& path, const ImageHeader& header, Scale scale,
                RgbImage* out, bool fast = false);

  // Decodes at `scale` only a window of the image covering `want` (in the scaled image's pixels) into *out, when
  // the format allows it (JPEG, not CMYK, ending with its EOI marker; see jpeg_region.h), else the whole image;
  // *origin is where *out's top-left pixel lies in the scaled image. Same pixels as decode() within `want`.
  Status decode_region(std::span<const uint8_t> bytes, const std::string& path, const ImageHeader& header,
                       Scale scale, PixelRect want, RgbImage* out, PixelRect* origin, bool fast = false);

 private:
  ImageDecoder() = default;
  Status decode_jpeg(std::span<const uint8_t> bytes, const std::string& path, Scale scale, RgbImage* out, int flags);
  Status decode_png(std::span<const uint8_t> bytes, const std::string& path, RgbImage* out);
  Status jpeg_header(std::span<const uint8_t> bytes, const std::string& path, int* w, int* h, int* subsamp,
                     int* colorspace);

  void reset_tj();  // a fresh TurboJPEG handle: for each image, and after an error

  void* tj_ = nullptr;  // tjhandle
  JpegRegionDecoder region_;
  std::vector<uint8_t> cmyk_;
};

}  // namespace batchd::daemon
