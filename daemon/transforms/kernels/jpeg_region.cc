#include "transforms/kernels/jpeg_region.h"

#include <csetjmp>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include <algorithm>

namespace batchd::daemon {

namespace {

// libjpeg reports fatal errors through error_exit, which must not return: jump back to decode_window().
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) are counted, as libjpeg's default does, and otherwise ignored; trace messages are dropped.
void on_emit_message(j_common_ptr cinfo, int level) {
  if (level < 0) ++cinfo->err->num_warnings;
}

}  // namespace

struct JpegRegionDecoder::State {
  jpeg_decompress_struct cinfo{};
  ErrorManager err{};
  std::vector<JSAMPROW> rows;
};

JpegRegionDecoder::JpegRegionDecoder() : state_(std::make_unique<State>()) {
  jpeg_std_error(&state_->err.pub);
  state_->err.pub.error_exit = on_error_exit;
  state_->err.pub.emit_message = on_emit_message;
}

// Safe when no decompressor exists (libjpeg's destroy does nothing without its memory manager).
JpegRegionDecoder::~JpegRegionDecoder() { jpeg_destroy_decompress(&state_->cinfo); }

namespace {

// jpeg_create_decompress with the error jump armed: it fails only when out of memory, through error_exit.
bool create_decompressor(jpeg_decompress_struct* cinfo, ErrorManager* err) {
  if (setjmp(err->jump) != 0) return false;
  cinfo->err = &err->pub;
  jpeg_create_decompress(cinfo);
  return true;
}

// True if libjpeg may block-smooth this decode: a progressive JPEG (all of it is read by jpeg_start_decompress)
// with coefficients left incomplete (cut or corrupt scans). libjpeg-turbo 2.1 smooths a column-cropped decode
// differently from a whole one (upstream issues 456 and 700), so such an image is decoded full width.
bool may_smooth_blocks(const jpeg_decompress_struct* cinfo) {
  if (!cinfo->progressive_mode || !cinfo->do_block_smoothing || cinfo->coef_bits == nullptr) return false;
  for (int ci = 0; ci < cinfo->num_components; ++ci) {
    for (int k = 1; k < DCTSIZE2; ++k) {
      if (cinfo->coef_bits[ci][k] != 0) return true;  // -1: never sent; > 0: not refined to the last bit
    }
  }
  return false;
}

// The libjpeg calls, in a function whose locals are all trivial (longjmp skips destructors). Returns false on a
// fatal error (message in err->message); the decompressor is then reset by the caller.
bool decode_window(jpeg_decompress_struct* cinfo, ErrorManager* err, const uint8_t* data, size_t size, int num,
                   int denom, const PixelRect* want, bool fast, RgbImage* out, PixelRect* origin,
                   std::vector<JSAMPROW>* rows) {
  if (setjmp(err->jump) != 0) return false;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  cinfo->out_color_space = JCS_EXT_RGB;
  cinfo->scale_num = static_cast<unsigned int>(num);
  cinfo->scale_denom = static_cast<unsigned int>(denom);
  cinfo->dct_method = fast ? JDCT_IFAST : JDCT_ISLOW;
  cinfo->do_fancy_upsampling = fast ? FALSE : TRUE;
  jpeg_start_decompress(cinfo);
  const int full_w = static_cast<int>(cinfo->output_width), full_h = static_cast<int>(cinfo->output_height);
  const int x0 = std::clamp(want->x, 0, full_w - 1), y0 = std::clamp(want->y, 0, full_h - 1);
  const int x1 = std::clamp(want->x + want->width, x0 + 1, full_w);
  const int y1 = std::clamp(want->y + want->height, y0 + 1, full_h);
  JDIMENSION xoffset = static_cast<JDIMENSION>(x0), width = static_cast<JDIMENSION>(x1 - x0);
  if (width < cinfo->output_width && !may_smooth_blocks(cinfo)) {
    jpeg_crop_scanline(cinfo, &xoffset, &width);  // widens to iMCU boundaries
  } else {
    xoffset = 0;
  }
  if (y0 > 0) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(y0));
  out->width = static_cast<int>(cinfo->output_width);  // the cropped width
  out->height = y1 - y0;
  out->pixels.resize(static_cast<size_t>(out->width) * out->height * 3);
  origin->x = static_cast<int>(xoffset);
  origin->y = y0;
  origin->width = out->width;
  origin->height = out->height;
  rows->resize(static_cast<size_t>(out->height));
  for (int r = 0; r < out->height; ++r) (*rows)[r] = out->pixels.data() + static_cast<size_t>(r) * out->width * 3;
  int done = 0;
  while (done < out->height) {
    const JDIMENSION got =
        jpeg_read_scanlines(cinfo, rows->data() + done, static_cast<JDIMENSION>(out->height - done));
    if (got == 0) break;  // cannot happen with a memory source; guards against an endless loop
    done += static_cast<int>(got);
  }
  if (done != out->height) return false;
  if (y1 == full_h) {
    jpeg_finish_decompress(cinfo);  // reads on to EOI: a bad marker after the last row is an error, as in PIL
  } else {
    jpeg_abort_decompress(cinfo);  // the rows below the window are never decoded
  }
  return true;
}

}  // namespace

Status JpegRegionDecoder::decode(std::span<const uint8_t> bytes, const std::string& path, int num, int denom,
                                 PixelRect want, bool fast, RgbImage* out, PixelRect* origin) {
  State& s = *state_;
  s.err.message[0] = '\0';
  s.err.pub.num_warnings = 0;
  // A fresh decompressor per image: libjpeg-turbo 2.1 keeps some cropping/skipping state across
  // jpeg_abort_decompress(), which corrupted rows of the next image's window (found by
  // RegionDecodeEqualsWholeDecodeInsideTheRegion). Creating one costs a few microseconds.
  if (!create_decompressor(&s.cinfo, &s.err)) {
    jpeg_destroy_decompress(&s.cinfo);
    return Error(ErrorCode::kResourceExhausted, path + ": cannot create a JPEG decompressor (" +
                                                    std::string(s.err.message) + "): the worker is out of memory");
  }
  const bool ok = decode_window(&s.cinfo, &s.err, bytes.data(), bytes.size(), num, denom, &want, fast, out, origin,
                                &s.rows);
  jpeg_destroy_decompress(&s.cinfo);
  if (!ok) {
    const std::string why = s.err.message[0] != '\0' ? s.err.message : "decoder stopped early";
    return Error(ErrorCode::kDataError, path + ": corrupt JPEG (" + why + ")");
  }
  return ok_status();
}

}  // namespace batchd::daemon
