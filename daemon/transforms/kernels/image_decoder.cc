#include "transforms/kernels/image_decoder.h"

#include <spng.h>
#include <turbojpeg.h>

#include <cstring>

namespace batchd::daemon {

namespace {

Error bad_image(const std::string& path, const std::string& why) {
  return Error(ErrorCode::kDataError, path + ": " + why);
}

bool is_jpeg(std::span<const uint8_t> b) { return b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF; }
bool is_png(std::span<const uint8_t> b) {
  static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}

// Pillow's MULDIV255: a * b / 255, rounded.
inline uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}


// True if the JPEG data ends with the EOI marker (FF D9), ignoring zero or whitespace padding after it.
bool ends_with_eoi(std::span<const uint8_t> b) {
  size_t n = b.size();
  while (n > 0 && (b[n - 1] == 0 || b[n - 1] == ' ' || b[n - 1] == '\n' || b[n - 1] == '\r')) --n;
  return n >= 2 && b[n - 2] == 0xFF && b[n - 1] == 0xD9;
}

struct SpngCtx {
  spng_ctx* ctx = spng_ctx_new(0);
  SpngCtx() { spng_set_image_limits(ctx, kMaxImageSide, kMaxImageSide); }
  ~SpngCtx() { spng_ctx_free(ctx); }
};

Status check_size(const std::string& path, int w, int h) {
  if (w <= 0 || h <= 0 || w > kMaxImageSide || h > kMaxImageSide || int64_t{w} * h > kMaxImagePixels) {
    return Error(ErrorCode::kDataError, path + ": image of " + std::to_string(w) + "x" + std::to_string(h) +
                                            " pixels is larger than batchd decodes (" + std::to_string(kMaxImageSide) +
                                            " per side, 2^28 pixels)");
  }
  return ok_status();
}

// The factor TurboJPEG 2.1 decodes with when asked for the size `s` gives: tjDecompress2 takes an output size, not a
// factor, and uses the first of its factors (largest first) whose scaled size fits. Two factors can give one size
// (a 7x3 image is 7x3 at 1/1 and at 7/8) but not the same pixels, so the libjpeg region decoder must use this one
// too (found by fuzz_decode: a 15/8 region decode differed from the whole decode, which TurboJPEG made at 2/1).
Scale turbojpeg_scale(int w, int h, Scale s) {
  const int sw = scaled_size(w, s), sh = scaled_size(h, s);
  int n = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&n);
  for (int i = 0; i < n; ++i) {
    const Scale f{factors[i].num, factors[i].denom};
    if (scaled_size(w, f) <= sw && scaled_size(h, f) <= sh) return f;
  }
  return s;
}

}  // namespace

Result<std::unique_ptr<ImageDecoder>> ImageDecoder::create() {
  std::unique_ptr<ImageDecoder> d(new ImageDecoder());
  d->tj_ = tjInitDecompress();
  if (d->tj_ == nullptr) return Error(ErrorCode::kInternal, std::string("tjInitDecompress: ") + tjGetErrorStr2(nullptr));
  return d;
}

Status ImageDecoder::jpeg_header(std::span<const uint8_t> bytes, const std::string& path, int* w, int* h,
                                 int* subsamp, int* colorspace) {
  // Every image starts on a fresh handle: a TurboJPEG handle keeps the quantization and Huffman tables of the
  // images before, so a file missing one decoded with another image's (PIL fails it), differently on each worker.
  reset_tj();
  if (tjDecompressHeader3(tj_, bytes.data(), bytes.size(), w, h, subsamp, colorspace) != 0 &&
      (tjGetErrorCode(tj_) != TJERR_WARNING || *w <= 0 || *h <= 0)) {  // warnings (junk bytes) are tolerated
    Error e = bad_image(path, std::string("corrupt JPEG header: ") + tjGetErrorStr2(tj_));
    reset_tj();
    return e;
  }
  return ok_status();
}

void ImageDecoder::reset_tj() {
  // TurboJPEG 2.1 leaves its handle mid-header after a failed header read: every later call on it then fails with
  // the same message (one corrupt file would poison every later image of the worker). A fresh handle is cheap
  // (under a microsecond).
  tjDestroy(tj_);
  tj_ = tjInitDecompress();
}

ImageDecoder::~ImageDecoder() {
  if (tj_ != nullptr) tjDestroy(tj_);
}

Result<ImageHeader> ImageDecoder::header(std::span<const uint8_t> bytes, const std::string& path) {
  if (is_jpeg(bytes)) {
    int w = 0, h = 0, subsamp = 0, colorspace = 0;
    BATCHD_RETURN_IF_ERROR(jpeg_header(bytes, path, &w, &h, &subsamp, &colorspace));
    BATCHD_RETURN_IF_ERROR(check_size(path, w, h));
    return ImageHeader{ImageFormat::kJpeg, w, h, colorspace == TJCS_CMYK || colorspace == TJCS_YCCK};
  }
  if (is_png(bytes)) {
    SpngCtx png;
    spng_ihdr ihdr{};
    int rc = spng_set_png_buffer(png.ctx, bytes.data(), bytes.size());
    if (rc == 0) rc = spng_get_ihdr(png.ctx, &ihdr);
    if (rc != 0) return bad_image(path, std::string("corrupt PNG header: ") + spng_strerror(rc));
    BATCHD_RETURN_IF_ERROR(check_size(path, static_cast<int>(ihdr.width), static_cast<int>(ihdr.height)));
    return ImageHeader{ImageFormat::kPng, static_cast<int>(ihdr.width), static_cast<int>(ihdr.height)};
  }
  // What it starts with is not quoted: an error must never show what a file holds (issue 23, finding 6).
  return bad_image(path, "not a JPEG or PNG image (it starts with neither signature: JPEG ff d8 ff, PNG 89 50 4e "
                         "47 0d 0a 1a 0a)");
}

Scale ImageDecoder::choose_scale(const ImageHeader& header, double crop_w, double crop_h, int min_w,
                                 int min_h) const {
  Scale best;
  if (header.format != ImageFormat::kJpeg) return best;
  int n = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&n);
  for (int i = 0; i < n; ++i) {
    const tjscalingfactor f = factors[i];
    // Only 1/2, 1/4 and 1/8: libjpeg-turbo has SIMD IDCTs for those; its 7/8, 3/4, 5/8 and 3/8 IDCTs are plain C
    // and slower than a full-size decode (measured on this project's 2,000-photo benchmark: 3/4 took 862 µs an
    // image, 1/1 516 µs, 1/2 429 µs).
    if (f.num != 1 || f.denom < 2) continue;
    if (crop_w * f.num / f.denom >= min_w && crop_h * f.num / f.denom >= min_h &&
        static_cast<double>(f.num) / f.denom < static_cast<double>(best.num) / best.denom) {
      best = {f.num, f.denom};
    }
  }
  return best;
}

Status ImageDecoder::decode(std::span<const uint8_t> bytes, const std::string& path, const ImageHeader& header,
                            Scale scale, RgbImage* out, bool fast) {
  if (header.format == ImageFormat::kPng) return decode_png(bytes, path, out);
  return decode_jpeg(bytes, path, scale, out, fast ? TJFLAG_FASTDCT | TJFLAG_FASTUPSAMPLE : 0);
}

Status ImageDecoder::decode_region(std::span<const uint8_t> bytes, const std::string& path,
                                   const ImageHeader& header, Scale scale, PixelRect want, RgbImage* out,
                                   PixelRect* origin, bool fast) {
  if (header.format == ImageFormat::kJpeg && !header.cmyk && ends_with_eoi(bytes)) {
    const Scale s = turbojpeg_scale(header.width, header.height, scale);
    return region_.decode(bytes, path, s.num, s.denom, want, fast, out, origin);
  }
  BATCHD_RETURN_IF_ERROR(decode(bytes, path, header, scale, out, fast));
  *origin = {0, 0, out->width, out->height};
  return ok_status();
}

Status ImageDecoder::decode_jpeg(std::span<const uint8_t> bytes, const std::string& path, Scale scale,
                                 RgbImage* out, int flags) {
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  BATCHD_RETURN_IF_ERROR(jpeg_header(bytes, path, &w, &h, &subsamp, &colorspace));
  BATCHD_RETURN_IF_ERROR(check_size(path, w, h));
  out->width = scaled_size(w, scale);
  out->height = scaled_size(h, scale);
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const size_t pixels = static_cast<size_t>(out->width) * out->height;
  out->pixels.resize(pixels * 3);
  uint8_t* target = out->pixels.data();
  if (cmyk) {
    cmyk_.resize(pixels * 4);
    target = cmyk_.data();
  }
  // Stop on the first warning to see it; a truncated file is an error (as in PIL), other warnings (extraneous
  // bytes before a marker, ...) are tolerated as PIL tolerates them: decode again without stopping.
  const int pf = cmyk ? TJPF_CMYK : TJPF_RGB;
  int rc = tjDecompress2(tj_, bytes.data(), bytes.size(), target, out->width, 0, out->height, pf,
                     flags | TJFLAG_STOPONWARNING);
  if (rc != 0) {
    const std::string msg = tjGetErrorStr2(tj_);
    // libjpeg reports only the first warning of a decode, so a truncation after another warning would hide
    // behind it: a JPEG whose data does not end with its EOI marker is truncated, whatever the warning said.
    const bool truncated = msg.find("Premature end") != std::string::npos || !ends_with_eoi(bytes);
    if (tjGetErrorCode(tj_) != TJERR_WARNING || truncated) {
      reset_tj();
      return bad_image(path, (truncated ? "truncated JPEG (" : "corrupt JPEG (") + msg + ")");
    }
    if (!cmyk) {
      // Decode again, tolerating warnings, with the libjpeg API: TurboJPEG 2.1 reports a fatal error that follows
      // a warning as a mere warning (leaving rows unwritten); this decoder tells them apart. Same pixels.
      PixelRect whole{0, 0, out->width, out->height}, at;
      const Scale s = turbojpeg_scale(w, h, scale);
      return region_.decode(bytes, path, s.num, s.denom, whole, (flags & TJFLAG_FASTDCT) != 0, out, &at);
    }
    rc = tjDecompress2(tj_, bytes.data(), bytes.size(), target, out->width, 0, out->height, pf, flags);
    // A fatal error after the warning is reported as a warning too, with the rows after it unwritten (the last
    // image's pixels showed through). libjpeg prints only a decode's first warning, so the message is then the
    // error's, not that warning again.
    if (rc != 0 && (tjGetErrorCode(tj_) != TJERR_WARNING || msg != tjGetErrorStr2(tj_))) {
      const std::string why = tjGetErrorStr2(tj_);
      reset_tj();
      return bad_image(path, "corrupt JPEG (" + why + ")");
    }
  }
  if (cmyk) {  // Adobe-inverted CMYK -> RGB, as Pillow's "CMYK;I" then convert("RGB")
    for (size_t i = 0; i < pixels; ++i) {
      const uint8_t* p = cmyk_.data() + 4 * i;
      const int nk = p[3];
      for (int c = 0; c < 3; ++c) out->pixels[3 * i + c] = static_cast<uint8_t>(nk - muldiv255(255 - p[c], nk));
    }
  }
  return ok_status();
}

Status ImageDecoder::decode_png(std::span<const uint8_t> bytes, const std::string& path, RgbImage* out) {
  SpngCtx png;
  spng_ihdr ihdr{};
  size_t size = 0;
  int rc = spng_set_png_buffer(png.ctx, bytes.data(), bytes.size());
  if (rc == 0) rc = spng_get_ihdr(png.ctx, &ihdr);
  if (rc == 0) rc = spng_decoded_image_size(png.ctx, SPNG_FMT_RGB8, &size);
  if (rc != 0) {
    return bad_image(path, std::string(rc == SPNG_IO_EOF ? "truncated PNG (" : "corrupt PNG (") + spng_strerror(rc) + ")");
  }
  out->width = static_cast<int>(ihdr.width);
  out->height = static_cast<int>(ihdr.height);
  out->pixels.resize(size);
  rc = spng_decode_image(png.ctx, out->pixels.data(), size, SPNG_FMT_RGB8, 0);
  if (rc != 0) return bad_image(path, std::string(rc == SPNG_IO_EOF || rc == SPNG_EOF ? "truncated PNG (" : "corrupt PNG (") +
                                      spng_strerror(rc) + ")");
  return ok_status();
}

}  // namespace batchd::daemon
