// jpeg_region.h — decode only a rectangle of a JPEG (libjpeg-turbo's libjpeg API: jpeg_crop_scanline and
// jpeg_skip_scanlines), at a DCT scaling factor.
//
// Why: RandomResizedCrop keeps on average about half of an image, so decoding the whole image wastes the IDCT,
// upsampling and colour conversion of the rest. Rows below the region are never decoded; rows above it are only
// entropy-decoded; columns are decoded from the iMCU column holding the region's left edge to the one holding its
// right edge. TurboJPEG 3.0's tj3SetCroppingRegion does the same; Debian 12 ships libjpeg-turbo 2.1, whose TurboJPEG
// API has no cropping, so this uses the libjpeg API of the same library.
//
// Pixels equal those of a full decode with the same flags (tested), except at the region's edges when `fast` is off
// (libjpeg's fancy upsampling reads neighbouring rows). Corrupt data below the window is not seen (those rows are
// never decoded); a window that reaches the last row reads on to the EOI marker, as a whole decode does. A
// progressive JPEG whose coefficients are incomplete (cut or corrupt scans; libjpeg then smooths its blocks, and
// libjpeg-turbo 2.1 smooths a column-cropped decode differently) is decoded full width, rows still skipped.
// Only 3-component (YCbCr/RGB) and grayscale JPEGs; the caller decodes CMYK/YCCK ones whole.
// One per worker process; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "batchd/result.h"
#include "transforms/kernels/resample.h"

namespace batchd::daemon {

// A rectangle in the scaled image's pixel coordinates.
struct PixelRect {
  int x = 0, y = 0, width = 0, height = 0;
};

class JpegRegionDecoder final {
 public:
  JpegRegionDecoder();
  ~JpegRegionDecoder();
  JpegRegionDecoder(const JpegRegionDecoder&) = delete;
  JpegRegionDecoder& operator=(const JpegRegionDecoder&) = delete;

  // Decodes a window covering `want` (clamped to the scaled image) of the JPEG in `bytes` scaled by num/denom into
  // *out (capacity reused); *origin is the window's top-left corner in the scaled image (the window starts at or
  // left of want.x, at want.y). `fast`: fast integer IDCT and fast (non-fancy) chroma upsampling. A corrupt
  // stream is an error naming `path`; libjpeg's warnings (corrupt data it recovered from) are tolerated, as in PIL.
  // The caller checks that the data ends with an EOI marker (a truncated file is its error to report).
  Status decode(std::span<const uint8_t> bytes, const std::string& path, int num, int denom, PixelRect want,
                bool fast, RgbImage* out, PixelRect* origin);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace batchd::daemon
