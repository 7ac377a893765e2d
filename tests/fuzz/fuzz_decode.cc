// libFuzzer target: arbitrary bytes as an image file through the decode path a worker runs for train224/val224 —
// ImageDecoder's header, whole decode (TurboJPEG, libspng) and region decode (libjpeg, its setjmp error path), DCT
// scaling, and the worker's own crop geometry and resample (CropResizer) — in process, with one long-lived decoder
// as a worker has (a corrupt image must not spoil the next one). Any crash, leak, hang or broken invariant below
// is a finding (a broken invariant aborts with what broke). ASan/UBSan check batchd's code; Debian's libjpeg-turbo
// and libspng are not instrumented (ASan sees their memcpy/memset, not their own loads and stores), and coverage
// guides the fuzzer by batchd's branches only.
//
// Input: 8 parameter bytes p, then the file.
//   p[0] bit 0: val (Resize(resize) + CenterCrop(crop)) instead of train (crop the box, resize to crop x crop);
//        bit 1: exact decode instead of the fast region decode; bit 2: the raw check's window reaches past the image.
//   p[1]: crop = 8 + p[1]; p[2]: val's resize = crop + 4 * p[2]; p[3]: the raw check's DCT scale (one of
//   TurboJPEG's factors, 1/8 to 2/1); p[4], p[5]: the box's left and top as fractions (/255) of the image's
//   width - 1 and height - 1; p[6], p[7]: its width - 1 and height - 1 as fractions of what lies right and below.
// What must hold:
//   - header(): an error is a kDataError whose message starts with the file's name; else both sides are in
//     [1, 32768] with at most 2^28 pixels. (Images over 2^19 pixels or 2048 a side stop after the header: a few
//     bytes can declare a 2^28-pixel image, and decoding and resampling it under ASan would cost seconds and
//     ~1 GiB, a false timeout; the size limit itself is ImageCodecTest's.)
//   - Raw check: decode() at scale p[3] (fast) gives the scaled size (PNG: unscaled) and w * h * 3 bytes;
//     decode_region() of the box (on the scaled image) gives a window inside the image that covers the clamped
//     box, with its pixels equal to the whole decode's there; if the region decode fails, so does the whole one.
//   - The worker's CropResizer: the fast region path equals the fast whole-image path byte for byte (the exact
//     path equals a second run of itself), each written into a buffer pre-filled with other bytes, so every output
//     byte is written; it fails only where the reference fails too.
//   - decode() by the long-lived decoder equals decode() by a new one: nothing of earlier images shows.
//   - Every error names the file and is a kDataError. Decoded images live in fresh vectors of their exact size,
//     so ASan sees a read past one.
//
// Built by setup.sh with clang-14 into build-fuzz/ (BATCHD_FUZZ=ON) and run by ctest for 20 s
// (tests/fuzz/run_fuzz.sh). The seeds, tests/fuzz/corpus_decode/, come from make_decode_corpus.py. A long run:
//   mkdir -p /tmp/decode-corpus && nice -n 19 build-fuzz/bin/fuzz_decode -runs=1000000 -max_len=65536 \
//     -timeout=120 -rss_limit_mb=4096 -dict=tests/fuzz/decode.dict -print_final_stats=1 /tmp/decode-corpus \
//     tests/fuzz/corpus_decode
// (-timeout is wall-clock time: at nice 19 on a busy machine an input can wait seconds for a CPU; ctest's 10 s
// runs at normal priority.)
#include <turbojpeg.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transforms/kernels/crop_resize.h"
#include "transforms/kernels/image_decoder.h"

namespace {

using namespace batchd::daemon;

constexpr size_t kParamBytes = 8;
constexpr int64_t kMaxFuzzPixels = int64_t{1} << 19;
constexpr int kMaxFuzzSide = 2048;
const std::string kPath = "fuzz.img";

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_decode: invariant broken: %s\n", what.c_str());
  std::abort();
}
void check(bool ok, const std::string& what) {
  if (!ok) broken(what);
}
// An error from the decode path: a kDataError that names the file.
void check_error(const batchd::Error& e) {
  check(e.code() == batchd::ErrorCode::kDataError && e.message().rfind(kPath + ": ", 0) == 0,
        "error is not a kDataError naming the file: " + e.message());
}
void check_status(const batchd::Status& st) {
  if (!st.ok()) check_error(st.error());
}
// p (0..255) as a fraction of [0, n].
int frac(uint8_t p, int n) { return static_cast<int>(int64_t{p} * n / 255); }

// decode() and decode_region() at scale `s` with the window `want`, checked against each other.
void raw_check(ImageDecoder& dec, std::span<const uint8_t> file, const ImageHeader& hdr, Scale s, PixelRect want) {
  const bool png = hdr.format == ImageFormat::kPng;
  const int sw = png ? hdr.width : scaled_size(hdr.width, s), sh = png ? hdr.height : scaled_size(hdr.height, s);
  RgbImage whole, part;
  PixelRect at;
  const batchd::Status whole_st = dec.decode(file, kPath, hdr, s, &whole, /*fast=*/true);
  check_status(whole_st);
  const batchd::Status part_st = dec.decode_region(file, kPath, hdr, s, want, &part, &at, /*fast=*/true);
  check_status(part_st);
  if (whole_st.ok()) {
    check(whole.width == sw && whole.height == sh, "decode() size is not the header's scaled size");
    check(whole.pixels.size() == size_t{3} * sw * sh, "decode() buffer is not width * height * 3 bytes");
  }
  // The worker's decoder has decoded other images before; a new one has not. Same result.
  RgbImage fresh;
  const batchd::Status fresh_st = ImageDecoder::create().value()->decode(file, kPath, hdr, s, &fresh, true);
  check(fresh_st.ok() == whole_st.ok() && fresh.pixels == whole.pixels,
        "decode() depends on the images decoded before (a new decoder: " +
            (fresh_st.ok() ? std::string("ok") : fresh_st.error().message()) + ")");
  if (!part_st.ok()) {
    check(!whole_st.ok(), "decode_region() failed where decode() did not: " + part_st.error().message());
    return;
  }
  const int x0 = std::clamp(want.x, 0, sw - 1), y0 = std::clamp(want.y, 0, sh - 1);
  const int x1 = std::clamp(want.x + want.width, x0 + 1, sw), y1 = std::clamp(want.y + want.height, y0 + 1, sh);
  check(at.width == part.width && at.height == part.height, "decode_region() origin size is not the image's");
  check(part.pixels.size() == size_t{3} * part.width * part.height, "decode_region() buffer size");
  check(at.x >= 0 && at.y >= 0 && at.x + at.width <= sw && at.y + at.height <= sh,
        "decode_region() window reaches outside the scaled image");
  check(at.x <= x0 && at.y <= y0 && at.x + at.width >= x1 && at.y + at.height >= y1,
        "decode_region() window does not cover the (clamped) request");
  if (!whole_st.ok()) return;  // corruption outside the window: the region decode need not see it
  for (int y = y0; y < y1; ++y) {
    const uint8_t* a = whole.row(y) + size_t{3} * x0;
    const uint8_t* b = part.row(y - at.y) + size_t{3} * (x0 - at.x);
    check(std::memcmp(a, b, size_t{3} * (x1 - x0)) == 0,
          "decode_region() pixels differ from decode()'s in row " + std::to_string(y));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ImageDecoder* dec = ImageDecoder::create().value().release();  // one per worker, kept across images
  if (size < kParamBytes) return 0;
  const uint8_t* p = data;
  const std::span<const uint8_t> file(data + kParamBytes, size - kParamBytes);

  auto hdr = dec->header(file, kPath);
  if (!hdr.ok()) {
    check_error(hdr.error());
    return 0;
  }
  const int w = hdr->width, h = hdr->height;
  check(w >= 1 && h >= 1 && w <= 32768 && h <= 32768 && int64_t{w} * h <= (int64_t{1} << 28),
        "header() accepted " + std::to_string(w) + "x" + std::to_string(h));
  if (int64_t{w} * h > kMaxFuzzPixels || w > kMaxFuzzSide || h > kMaxFuzzSide) return 0;

  // The box, inside the image: left/top anywhere, at least one pixel wide and high.
  CropBox box;
  box.left = frac(p[4], w - 1);
  box.top = frac(p[5], h - 1);
  box.width = 1 + frac(p[6], w - box.left - 1);
  box.height = 1 + frac(p[7], h - box.top - 1);

  int nfactors = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&nfactors);
  const tjscalingfactor f = factors[p[3] % nfactors];
  const Scale s{f.num, f.denom};
  const int sw = scaled_size(w, s), sh = scaled_size(h, s);
  if (int64_t{sw} * sh <= kMaxFuzzPixels && sw <= 2 * kMaxFuzzSide && sh <= 2 * kMaxFuzzSide) {
    PixelRect want{frac(p[4], sw - 1), frac(p[5], sh - 1), 0, 0};
    want.width = 1 + frac(p[6], sw - want.x - 1);
    want.height = 1 + frac(p[7], sh - want.y - 1);
    if (p[0] & 4) want = {want.x - 7, want.y - 5, want.width + 20, want.height + 13};
    raw_check(*dec, file, *hdr, s, want);
  }

  CropSpec spec;
  spec.center = (p[0] & 1) != 0;
  spec.box = box;
  spec.crop = 8 + p[1];
  spec.resize = spec.crop + 4 * p[2];
  const bool exact = (p[0] & 2) != 0;
  const size_t out_bytes = size_t{3} * spec.crop * spec.crop;
  std::vector<uint8_t> got(out_bytes, 0x00), want(out_bytes, 0xFF);
  // Fresh resizers: their decoded images are exactly sized, so a read past one is an ASan report.
  const batchd::Status got_st = CropResizer(dec).run(file, kPath, *hdr, spec,
                                                     exact ? DecodeMode::kExact : DecodeMode::kFastRegion, got.data());
  const batchd::Status want_st = CropResizer(dec).run(file, kPath, *hdr, spec,
                                                      exact ? DecodeMode::kExact : DecodeMode::kFastWhole, want.data());
  check_status(got_st);
  check_status(want_st);
  if (!got_st.ok()) {
    check(!want_st.ok(), "the worker's decode failed where the whole-image one did not: " + got_st.error().message());
  } else if (want_st.ok()) {
    check(got == want, exact ? "the exact path is not deterministic, or leaves output bytes unwritten"
                             : "the region path differs from the whole-image path, or leaves output bytes unwritten");
  } else {
    check(!exact, "the exact path failed once and succeeded once: " + want_st.error().message());
  }
  return 0;
}
