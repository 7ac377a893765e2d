// Image decoding, resampling and crop geometry against reference tools: djpeg (libjpeg-turbo-progs) for JPEG,
// Pillow (python3-pil, through /usr/bin/python3) for CMYK JPEG, PNG and bilinear resizing, torchvision's formulas
// for the crop geometry. Inputs are made at run time in a private temp dir from real photographs
// (../shared/data/make_imagefolder.py beside the checkout, which needs python3-skimage).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "image_decoder.h"
#include "imagefolder_dataset.h"
#include "resample.h"
#include "vision_pipeline.h"
#include "vision_transforms.h"

namespace batchd::daemon {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPy = "/usr/bin/python3";

// Pillow-side helpers, one subcommand per reference computation; every output is raw RGB bytes.
constexpr const char* kHelper = R"PY(import sys
from PIL import Image
a = sys.argv[1:]
def raw(p, w, h): return Image.frombytes('RGB', (int(w), int(h)), open(p, 'rb').read())
if a[0] == 'cmyk':  # src dst.jpg dst.raw
    Image.open(a[1]).convert('CMYK').save(a[2], quality=95)
    assert Image.open(a[2]).mode == 'CMYK'
    open(a[3], 'wb').write(Image.open(a[2]).convert('RGB').tobytes())
elif a[0] == 'png':  # src mode colors dst.png dst.raw
    im = Image.open(a[1]).convert('RGB')
    if a[2] == 'RGBA': im.putalpha(im.convert('L'))
    elif a[2] == 'P': im = im.convert('P', palette=Image.ADAPTIVE, colors=int(a[3]))
    elif a[2] != 'RGB': im = im.convert(a[2])
    im.save(a[4])
    open(a[5], 'wb').write(Image.open(a[4]).convert('RGB').tobytes())
elif a[0] == 'resize':  # raw w h dst W H [x0 y0 x1 y1]
    box = tuple(float(v) for v in a[7:11]) if len(a) > 7 else None
    open(a[4], 'wb').write(raw(*a[1:4]).resize((int(a[5]), int(a[6])), Image.BILINEAR, box=box).tobytes())
elif a[0] == 'crop':  # raw w h dst l t r b W H
    c = raw(*a[1:4]).crop(tuple(int(v) for v in a[5:9]))
    open(a[4], 'wb').write(c.resize((int(a[9]), int(a[10])), Image.BILINEAR).tobytes())
elif a[0] == 'window':  # raw w h dst W H l t -> resize to WxH, then the 224x224 crop at (l, t)
    l, t = int(a[7]), int(a[8])
    r = raw(*a[1:4]).resize((int(a[5]), int(a[6])), Image.BILINEAR).crop((l, t, l + 224, t + 224))
    open(a[4], 'wb').write(r.tobytes())
)PY";

int sh(const std::string& cmd) { return std::system(cmd.c_str()); }
// Its arguments, numbers printed by std::to_string, joined by spaces.
template <typename... T>
std::string args(const T&... v) {
  std::string out;
  ((out += (out.empty() ? "" : " ") + [](const auto& x) {
     if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>) return std::to_string(x);
     else return std::string(x);
   }(v)), ...);
  return out;
}
bool have_tool(const std::string& t) { return sh("command -v " + t + " >/dev/null 2>&1") == 0; }

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}
void spit(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}

// The per-process scratch dir, removed at exit: the Pillow helper and 20 photographs (seed 1: [0] is a 500x498
// colour photo, [4] a 333x423 colour one), or why they could not be made.
struct Scratch {
  std::string dir = ::testing::TempDir() + "batchd_image_codec_" + std::to_string(getpid());
  std::vector<std::string> photos;
  std::string why_not;
  Scratch() {
    fs::create_directories(dir);
    std::ofstream(dir + "/helper.py") << kHelper;
    const std::string maker = std::string(BATCHD_SOURCE_DIR) + "/../shared/data/make_imagefolder.py";
    if (sh(std::string(kPy) + " -c 'import PIL' 2>/dev/null") != 0) {
      why_not = "no PIL in /usr/bin/python3 (Debian: python3-pil)";
    } else if (!fs::exists(maker)) {
      why_not = maker + " is missing (shared/ must sit beside the checkout)";
    } else if (sh(args(kPy, maker, dir + "/photos", 20, 1, ">/dev/null")) != 0) {
      why_not = "make_imagefolder.py failed (Debian: python3-skimage)";
    } else {
      for (const auto& e : fs::recursive_directory_iterator(dir + "/photos"))
        if (e.path().extension() == ".jpg") photos.push_back(e.path().string());
      std::sort(photos.begin(), photos.end());
      if (photos.size() < 5) why_not = "make_imagefolder.py made fewer than 5 photographs";
    }
  }
  ~Scratch() { std::error_code ec; fs::remove_all(dir, ec); }
};
Scratch& scratch() { static Scratch s; return s; }
std::string tmp(const std::string& name) { return scratch().dir + "/" + name; }
std::string helper(const std::string& a) { return args(kPy, tmp("helper.py"), a); }

// Why the tests cannot run here, or "" when they can.
std::string missing(bool need_djpeg) {
  if (need_djpeg && !(have_tool("djpeg") && have_tool("cjpeg"))) return "no djpeg/cjpeg (Debian: libjpeg-turbo-progs)";
  return scratch().why_not;
}
#define SKIP_UNLESS_TOOLS(need_djpeg) \
  if (const std::string why = missing(need_djpeg); !why.empty()) GTEST_SKIP() << why

// A P5/P6 file as RGB (gray replicated into R=G=B).
RgbImage read_pnm(const std::string& path) {
  const std::vector<uint8_t> b = slurp(path);
  const std::string head(b.begin(), b.begin() + std::min<size_t>(b.size(), 64));
  RgbImage img;
  int maxval = 0, used = 0;
  char magic[3] = {};
  if (std::sscanf(head.c_str(), "%2s %d %d %d%n", magic, &img.width, &img.height, &maxval, &used) != 4 ||
      maxval != 255) {
    ADD_FAILURE() << "not an 8-bit PNM: " << path;
    return {};
  }
  const bool gray = std::string(magic) == "P5";
  const size_t n = static_cast<size_t>(img.width) * img.height, start = used + 1;
  EXPECT_EQ(b.size(), start + n * (gray ? 1 : 3)) << path;
  img.pixels.resize(n * 3);
  for (size_t i = 0; i < n * 3 && start + (gray ? i / 3 : i) < b.size(); ++i) {
    img.pixels[i] = b[start + (gray ? i / 3 : i)];
  }
  return img;
}

// Decodes `path` at `scale`; the Status is returned so that error tests can inspect it.
Status decode_file(const std::string& path, Scale scale, RgbImage* out, ImageHeader* hdr_out = nullptr,
                   bool fast = false) {
  static std::unique_ptr<ImageDecoder> dec = std::move(ImageDecoder::create().value());
  const std::vector<uint8_t> bytes = slurp(path);
  auto hdr = dec->header(bytes, path);
  if (!hdr.ok()) return hdr.error();
  if (hdr_out != nullptr) *hdr_out = *hdr;
  return dec->decode(bytes, path, *hdr, scale, out, fast);
}

int max_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  int m = a.size() == b.size() ? 0 : 256;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(int{a[i]} - int{b[i]}));
  return m;
}

// Decodes `jpeg` with our decoder and with `djpeg <opts> -ppm`; both must agree byte for byte. The header must
// give the full size, of which the decoded size is the scaled ceiling (as djpeg's). `fast` decodes must equal
// djpeg's fast integer IDCT without fancy upsampling.
void expect_same_as_djpeg(const std::string& jpeg, Scale scale, std::string opts, bool fast = false) {
  if (fast) opts += " -dct fast -nosmooth";
  SCOPED_TRACE(jpeg + " " + opts);
  const std::string ref = tmp("ref.pnm");
  ASSERT_EQ(sh("djpeg " + opts + " -ppm -outfile " + ref + " " + jpeg), 0);
  const RgbImage want = read_pnm(ref);
  RgbImage got;
  ImageHeader hdr;
  const Status st = decode_file(jpeg, scale, &got, &hdr, fast);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(hdr.format, ImageFormat::kJpeg);
  EXPECT_EQ((hdr.width * scale.num + scale.denom - 1) / scale.denom, want.width);
  EXPECT_EQ((hdr.height * scale.num + scale.denom - 1) / scale.denom, want.height);
  EXPECT_EQ(std::tie(got.width, got.height), std::tie(want.width, want.height));
  EXPECT_TRUE(got.pixels == want.pixels) << "max diff " << max_diff(got.pixels, want.pixels);
}

TEST(ImageCodecTest, JpegDecodesExactlyLikeDjpegAtFullAndDctScales) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/true);
  // 20 baseline photographs (colour 4:2:0 and grayscale), then progressive and grayscale re-encodings of one.
  std::vector<std::string> jpegs = scratch().photos;
  ASSERT_EQ(sh("djpeg -ppm -outfile " + tmp("src.ppm") + " " + jpegs[0]), 0);
  ASSERT_EQ(sh("cjpeg -progressive -outfile " + tmp("prog.jpg") + " " + tmp("src.ppm")), 0);
  ASSERT_EQ(sh("cjpeg -grayscale -outfile " + tmp("gray.jpg") + " " + tmp("src.ppm")), 0);
  jpegs.push_back(tmp("prog.jpg"));
  jpegs.push_back(tmp("gray.jpg"));
  for (const std::string& p : jpegs) {
    expect_same_as_djpeg(p, {1, 1}, "");
    expect_same_as_djpeg(p, {1, 2}, "-scale 1/2");
    expect_same_as_djpeg(p, {1, 4}, "-scale 1/4");
    expect_same_as_djpeg(p, {1, 1}, "", /*fast=*/true);
    expect_same_as_djpeg(p, {1, 2}, "-scale 1/2", /*fast=*/true);
  }
}

// decode_region() (train224's fast path) must give, inside the requested rectangle, the pixels of a whole decode
// with the same flags, and report where its window lies.
TEST(ImageCodecTest, RegionDecodeEqualsWholeDecodeInsideTheRegion) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/true);
  std::vector<std::string> jpegs(scratch().photos.begin(), scratch().photos.begin() + 6);
  ASSERT_EQ(sh("djpeg -ppm -outfile " + tmp("src.ppm") + " " + jpegs[0]), 0);
  ASSERT_EQ(sh("cjpeg -progressive -outfile " + tmp("rprog.jpg") + " " + tmp("src.ppm")), 0);
  ASSERT_EQ(sh("cjpeg -grayscale -outfile " + tmp("rgray.jpg") + " " + tmp("src.ppm")), 0);
  ASSERT_EQ(sh("cjpeg -sample 2x1 -outfile " + tmp("r422.jpg") + " " + tmp("src.ppm")), 0);
  for (const char* extra : {"rprog.jpg", "rgray.jpg", "r422.jpg"}) jpegs.push_back(tmp(extra));
  auto dec = std::move(ImageDecoder::create().value());
  SampleRng rng(7, 0, 0);
  int windows_narrower_than_image = 0;
  for (const std::string& p : jpegs) {
    const std::vector<uint8_t> bytes = slurp(p);
    const ImageHeader hdr = dec->header(bytes, p).value();
    for (Scale scale : {Scale{1, 1}, Scale{1, 2}, Scale{1, 4}}) {
      RgbImage whole, part;
      ASSERT_TRUE(dec->decode(bytes, p, hdr, scale, &whole, /*fast=*/true).ok());
      for (int i = 0; i < 6; ++i) {
        const CropBox b = random_resized_crop_params(whole.width, whole.height, rng);
        SCOPED_TRACE(args(p, scale.denom, b.left, b.top, b.width, b.height));
        PixelRect at;
        const Status st = dec->decode_region(bytes, p, hdr, scale, {b.left, b.top, b.width, b.height}, &part, &at, true);
        ASSERT_TRUE(st.ok()) << st.error().message();
        ASSERT_LE(at.x, b.left);
        ASSERT_EQ(at.y, b.top);
        ASSERT_GE(at.x + part.width, b.left + b.width);
        ASSERT_EQ(part.height, b.height);
        windows_narrower_than_image += part.width < whole.width;
        for (int y = 0; y < b.height; ++y) {
          ASSERT_TRUE(std::equal(whole.row(b.top + y) + b.left * 3, whole.row(b.top + y) + (b.left + b.width) * 3,
                                 part.row(y) + (b.left - at.x) * 3)) << "row " << y;
        }
      }
    }
  }
  EXPECT_GT(windows_narrower_than_image, 0) << "no window was cropped: the test did not test cropping";
  // A truncated file, and one whose data is cut inside the region, are still errors naming the file.
  std::vector<uint8_t> cut = slurp(jpegs[1]);
  cut.resize(cut.size() / 2);
  const ImageHeader hdr = dec->header(cut, "cut.jpg").value();
  RgbImage out;
  PixelRect at;
  const Status st = dec->decode_region(cut, "cut.jpg", hdr, {1, 1}, {0, hdr.height / 2, 64, 64}, &out, &at, true);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("cut.jpg: truncated JPEG"), std::string::npos) << st.error().message();
}

// One corrupt header must not poison the decoder for the next images of the worker (TurboJPEG 2.1 keeps a failed
// header read's state in its handle).
TEST(ImageCodecTest, ACorruptHeaderDoesNotBreakTheNextImage) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  std::vector<uint8_t> jpeg = slurp(scratch().photos[0]);
  const std::vector<uint8_t> dht = {0xFF, 0xC4};
  auto at = std::search(jpeg.begin(), jpeg.end(), dht.begin(), dht.end());
  ASSERT_NE(at, jpeg.end());
  std::fill(at + 5, at + 21, 0xFF);  // 16 code-length counts summing past 256
  spit(tmp("badhdr.jpg"), jpeg);
  RgbImage out;
  const Status bad = decode_file(tmp("badhdr.jpg"), {1, 1}, &out);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("badhdr.jpg: corrupt JPEG header"), std::string::npos) << bad.error().message();
  for (const std::string& good : {scratch().photos[0], scratch().photos[1]}) {
    const Status st = decode_file(good, {1, 1}, &out);
    EXPECT_TRUE(st.ok()) << good << ": " << st.error().message();
  }
}

// A fatal error after a warning is an error on every path (TurboJPEG 2.1 reports it as a warning), naming the file
// and libjpeg's reason; the same error without the warning too.
TEST(ImageCodecTest, AFatalErrorAfterAWarningFailsOnEveryPath) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  const std::vector<uint8_t> good = slurp(scratch().photos[0]);
  const std::vector<uint8_t> dqt = {0xFF, 0xDB}, sos = {0xFF, 0xDA};
  for (bool with_warning : {true, false}) {
    std::vector<uint8_t> jpeg = good;
    if (with_warning) jpeg.insert(std::search(jpeg.begin(), jpeg.end(), dqt.begin(), dqt.end()), {0x00, 0x11, 0x22});
    const size_t scan = std::search(jpeg.begin(), jpeg.end(), sos.begin(), sos.end()) - jpeg.begin();
    const size_t at = scan + (jpeg.size() - scan) * 7 / 10;
    jpeg.insert(jpeg.begin() + static_cast<long>(at), {0xFF, 0x28, 0x00, 0x00});  // a marker libjpeg refuses
    const std::string path = tmp(with_warning ? "warn_fatal.jpg" : "fatal.jpg");
    spit(path, jpeg);
    for (bool fast : {false, true}) {
      SCOPED_TRACE(args(path, fast ? "fast" : "exact"));
      RgbImage out;
      const Status st = decode_file(path, {1, 1}, &out, nullptr, fast);
      ASSERT_FALSE(st.ok()) << "a JPEG with an unsupported marker in its scan decoded";
      EXPECT_NE(st.error().message().find(path + ": corrupt JPEG ("), std::string::npos) << st.error().message();
      EXPECT_NE(st.error().message().find("0x28"), std::string::npos) << st.error().message();
    }
    // The region decoder (train224/val224's fast path) sees it when its window reaches the bad marker.
    auto dec = std::move(ImageDecoder::create().value());
    const ImageHeader hdr = dec->header(jpeg, path).value();
    RgbImage out;
    PixelRect where;
    const Status st = dec->decode_region(jpeg, path, hdr, {1, 1}, {0, 0, hdr.width, hdr.height}, &out, &where, true);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find(path + ": corrupt JPEG (Unsupported marker type 0x28)"), std::string::npos)
        << st.error().message();
  }
}

TEST(ImageCodecTest, CmykJpegMatchesPillowWithinOneLevel) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  for (const std::string& p : {scratch().photos[0], scratch().photos[4]}) {
    SCOPED_TRACE(p);
    ASSERT_EQ(sh(helper(args("cmyk", p, tmp("cmyk.jpg"), tmp("cmyk.raw")))), 0);
    RgbImage got;
    const Status st = decode_file(tmp("cmyk.jpg"), {1, 1}, &got);
    ASSERT_TRUE(st.ok()) << st.error().message();
    // Observed: max diff 0 (libjpeg-turbo and Pillow's libjpeg decode the same CMYK; the conversion is Pillow's).
    EXPECT_LE(max_diff(got.pixels, slurp(tmp("cmyk.raw"))), 1);
  }
}

TEST(ImageCodecTest, PngDecodesLikePillowConvertRgb) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  // Mode and palette size as Pillow writes them: 8-bit RGB, RGBA (alpha dropped), palettes of 8 and 4 bits, gray
  // 8-bit, gray+alpha, 1-bit.
  for (const std::string mode : {"RGB 0", "RGBA 0", "P 200", "P 16", "L 0", "LA 0", "1 0"}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(sh(helper(args("png", scratch().photos[0], mode, tmp("t.png"), tmp("t.raw")))), 0);
    RgbImage got;
    ImageHeader hdr;
    const Status st = decode_file(tmp("t.png"), {1, 1}, &got, &hdr);
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(hdr.format, ImageFormat::kPng);
    EXPECT_EQ(std::tie(got.width, got.height), std::tie(hdr.width, hdr.height));
    const std::vector<uint8_t> want = slurp(tmp("t.raw"));
    EXPECT_TRUE(got.pixels == want) << "max diff " << max_diff(got.pixels, want);
  }
}

TEST(ImageCodecTest, BadInputIsADataErrorNamingFileAndReason) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  ASSERT_EQ(sh(helper(args("png", scratch().photos[0], "RGB 0", tmp("ok.png"), tmp("ok.raw")))), 0);
  const std::vector<uint8_t> jpeg = slurp(scratch().photos[0]), png = slurp(tmp("ok.png"));
  const std::vector<std::tuple<std::string, std::vector<uint8_t>, std::string>> cases = {
      {"empty.jpg", {}, "not a JPEG or PNG"},
      {"text.jpg", {'h', 'e', 'l', 'l', 'o', '\n'}, "not a JPEG or PNG"},
      {"half.jpg", {jpeg.begin(), jpeg.begin() + jpeg.size() / 2}, "truncated"},
      {"half.png", {png.begin(), png.begin() + png.size() / 2}, "truncated"},
  };
  for (const auto& [name, bytes, reason] : cases) {
    spit(tmp(name), bytes);
    RgbImage out;
    const Status st = decode_file(tmp(name), {1, 1}, &out);
    ASSERT_FALSE(st.ok()) << name << " decoded";
    EXPECT_EQ(st.error().code(), ErrorCode::kDataError) << st.error().message();
    EXPECT_NE(st.error().message().find(tmp(name)), std::string::npos) << st.error().message();
    EXPECT_NE(st.error().message().find(reason), std::string::npos) << st.error().message();
  }
  // Cut anywhere after the headers: still an error, never a crash.
  for (int eighth = 1; eighth < 8; ++eighth) {
    spit(tmp("cut.jpg"), {jpeg.begin(), jpeg.begin() + jpeg.size() * eighth / 8});
    spit(tmp("cut.png"), {png.begin(), png.begin() + png.size() * eighth / 8});
    RgbImage out;
    EXPECT_FALSE(decode_file(tmp("cut.jpg"), {1, 2}, &out).ok()) << eighth << "/8";
    EXPECT_FALSE(decode_file(tmp("cut.png"), {1, 1}, &out).ok()) << eighth << "/8";
  }
}

// libjpeg reports only the first warning of a decode: junk bytes before a marker are tolerated (as PIL does), but
// they must not hide a truncation that follows them.
TEST(ImageCodecTest, JunkBytesAreToleratedButDoNotHideATruncation) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/true);
  std::vector<uint8_t> jpeg = slurp(scratch().photos[0]);
  const std::vector<uint8_t> dqt = {0xFF, 0xDB};
  auto at = std::search(jpeg.begin(), jpeg.end(), dqt.begin(), dqt.end());
  ASSERT_NE(at, jpeg.end());
  jpeg.insert(at, {0x00, 0x11, 0x22});
  spit(tmp("junk.jpg"), jpeg);
  RgbImage out;
  const Status ok = decode_file(tmp("junk.jpg"), {1, 1}, &out);
  EXPECT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_GT(out.width, 0);

  ASSERT_EQ(sh("djpeg -ppm " + scratch().photos[0] + " | cjpeg -progressive -outfile " + tmp("prog.jpg")), 0);
  std::vector<uint8_t> prog = slurp(tmp("prog.jpg"));
  const std::vector<uint8_t> sos = {0xFF, 0xDA};
  auto scan = std::search(prog.begin(), prog.end(), sos.begin(), sos.end());
  ASSERT_NE(scan, prog.end());
  auto next = std::search(scan + 2, prog.end(), sos.begin(), sos.end());  // the second scan's marker
  ASSERT_NE(next, prog.end());
  prog.insert(next, {0x00, 0x11});
  prog.resize(prog.size() * 3 / 4);
  spit(tmp("junk_cut.jpg"), prog);
  const Status cut = decode_file(tmp("junk_cut.jpg"), {1, 1}, &out);
  ASSERT_FALSE(cut.ok()) << "a truncated progressive JPEG decoded";
  EXPECT_NE(cut.error().message().find("truncated JPEG"), std::string::npos) << cut.error().message();
}

// Our resample of `src` vs Pillow's (`pil_args` after "<raw> w h <dst>"); returns the max difference.
int resample_vs_pillow(const RgbImage& src, int xo, int yo, const ResampleAxis& x, const ResampleAxis& y,
                       const std::string& pil_cmd, const std::string& pil_args,
                       ResampleOrder order = ResampleOrder::kPillow) {
  std::vector<uint8_t> ours(static_cast<size_t>(x.out_count) * y.out_count * 3), scratch_buf;
  resample_bilinear(src, xo, yo, x, y, ours.data(), &scratch_buf, order);
  EXPECT_EQ(sh(helper(args(pil_cmd, tmp("src.raw"), src.width, src.height, tmp("pil.raw"), pil_args))), 0);
  return max_diff(ours, slurp(tmp("pil.raw")));
}

TEST(ResampleTest, BilinearEqualsPillowOnRealPhotos) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  for (const std::string& p : {scratch().photos[0], scratch().photos[4]}) {
    SCOPED_TRACE(p);
    RgbImage src;
    ASSERT_TRUE(decode_file(p, {1, 1}, &src).ok());
    spit(tmp("src.raw"), src.pixels);
    const int w = src.width, h = src.height;
    auto full = [](int in, int out) { return ResampleAxis{in, 0.0, double(in), out, 0, out}; };
    // Observed max difference in every case below: 0 (the arithmetic is Pillow's, bit for bit).
    for (auto [W, H] : {std::pair{224, 168}, {w / 3, h * 2}, {w * 2, h / 3}, {w + 37, h + 11}, {w, h}}) {
      SCOPED_TRACE(std::to_string(W) + "x" + std::to_string(H));
      EXPECT_EQ(resample_vs_pillow(src, 0, 0, full(w, W), full(h, H), "resize", args(W, H)), 0);
    }
    // Crop then resize (RandomResizedCrop): PIL crops, we resample the sub-rectangle in place.
    const int l = 37, t = 21, r = l + w / 2 + 1, b = t + h / 3;
    EXPECT_EQ(resample_vs_pillow(src, l, t, full(r - l, 224), full(b - t, 224), "crop", args(l, t, r, b, 224, 224)),
              0);
    // A fractional box (Pillow's resize(box=...)).
    EXPECT_EQ(resample_vs_pillow(src, 0, 0, {w, 10.5, w - 20.25, 224, 0, 224}, {h, 3.75, h - 0.5, 160, 0, 160},
                                 "resize", args(224, 160, 10.5, 3.75, w - 20.25, h - 0.5)), 0);
    // Resize(256) + CenterCrop(224) computing only the window: PIL computes all of it, then crops.
    int rw = 0, rh = 0;
    resize_shorter_side(w, h, 256, &rw, &rh);
    const int cl = center_crop_offset(rw, 224), ct = center_crop_offset(rh, 224);
    EXPECT_EQ(resample_vs_pillow(src, 0, 0, {w, 0.0, double(w), rw, cl, 224}, {h, 0.0, double(h), rh, ct, 224},
                                 "window", args(rw, rh, cl, ct)), 0);
  }
}

// The fast order's arithmetic written plainly: Pillow's fixed point (22 fractional bits, round half up, clamp),
// vertical pass over the extent's columns first, then horizontal.
std::vector<uint8_t> fast_order_reference(const RgbImage& src, int xo, int yo, const ResampleAxis& x,
                                          const ResampleAxis& y) {
  const ResampleCoeffs cx = resample_coeffs(x), cy = resample_coeffs(y);
  auto clip = [](int64_t v) { return static_cast<uint8_t>(std::clamp<int64_t>(v >> 22, 0, 255)); };
  const int cols = x.in_size * 3;
  std::vector<uint8_t> tmp(static_cast<size_t>(y.out_count) * cols), out(static_cast<size_t>(y.out_count) * x.out_count * 3);
  for (int j = 0; j < y.out_count; ++j) {
    for (int c = 0; c < cols; ++c) {
      int64_t acc = 1 << 21;
      for (int t = 0; t < cy.bounds[2 * j + 1]; ++t) {
        acc += int64_t{src.row(yo + cy.bounds[2 * j] + t)[xo * 3 + c]} * cy.taps[j * cy.ksize + t];
      }
      tmp[static_cast<size_t>(j) * cols + c] = clip(acc);
    }
  }
  for (int j = 0; j < y.out_count; ++j) {
    for (int i = 0; i < x.out_count; ++i) {
      for (int ch = 0; ch < 3; ++ch) {
        int64_t acc = 1 << 21;
        for (int t = 0; t < cx.bounds[2 * i + 1]; ++t) {
          acc += int64_t{tmp[static_cast<size_t>(j) * cols + (cx.bounds[2 * i] + t) * 3 + ch]} * cx.taps[i * cx.ksize + t];
        }
        out[(static_cast<size_t>(j) * x.out_count + i) * 3 + ch] = clip(acc);
      }
    }
  }
  return out;
}

// The fast order (vertical pass first, two pixels per step horizontally): exactly its plain-written arithmetic, and
// within one level of Pillow's output, for even and odd output widths, shrinking and enlarging.
TEST(ResampleTest, FastOrderWithinOneLevelOfPillow) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  const std::string& p = scratch().photos[0];
  RgbImage src;
  ASSERT_TRUE(decode_file(p, {1, 1}, &src).ok());
  spit(tmp("src.raw"), src.pixels);
  const int w = src.width, h = src.height;
  for (auto [l, t, r, b, W, H] : {std::tuple{37, 21, 37 + w / 2 + 1, 21 + h / 3, 224, 224},
                                  {0, 0, w, h, 223, 131}, {5, 9, 105, 90, 224, 224}, {0, 0, w, h, w - 1, h}}) {
    SCOPED_TRACE(args(l, t, r, b, W, H));
    auto axis = [](int in, int out) { return ResampleAxis{in, 0.0, double(in), out, 0, out}; };
    EXPECT_LE(resample_vs_pillow(src, l, t, axis(r - l, W), axis(b - t, H), "crop", args(l, t, r, b, W, H),
                                 ResampleOrder::kFast), 1);
    std::vector<uint8_t> ours(static_cast<size_t>(W) * H * 3), scratch_buf;
    resample_bilinear(src, l, t, axis(r - l, W), axis(b - t, H), ours.data(), &scratch_buf, ResampleOrder::kFast);
    EXPECT_TRUE(ours == fast_order_reference(src, l, t, axis(r - l, W), axis(b - t, H)))
        << "max diff " << max_diff(ours, fast_order_reference(src, l, t, axis(r - l, W), axis(b - t, H)));
  }
}

// val224's fast path decodes only resample_input_range() of each axis and resamples that window with a negative
// origin: the output must equal the whole image's, in both orders.
TEST(ResampleTest, WindowOfTheInputRangeGivesTheWholeImagesOutput) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  for (const std::string& p : {scratch().photos[0], scratch().photos[4]}) {
    RgbImage src;
    ASSERT_TRUE(decode_file(p, {1, 1}, &src).ok());
    int nw = 0, nh = 0;
    resize_shorter_side(src.width, src.height, 256, &nw, &nh);
    const ResampleAxis x{src.width, 0.0, double(src.width), nw, center_crop_offset(nw, 224), 224};
    const ResampleAxis y{src.height, 0.0, double(src.height), nh, center_crop_offset(nh, 224), 224};
    const auto [x0, x1] = resample_input_range(x);
    const auto [y0, y1] = resample_input_range(y);
    ASSERT_LT(x1 - x0, src.width) << "the center crop should not need every column";
    RgbImage window;
    window.width = x1 - x0;
    window.height = y1 - y0;
    for (int r = y0; r < y1; ++r) window.pixels.insert(window.pixels.end(), src.row(r) + x0 * 3, src.row(r) + x1 * 3);
    for (ResampleOrder order : {ResampleOrder::kPillow, ResampleOrder::kFast}) {
      std::vector<uint8_t> whole(224 * 224 * 3), part(224 * 224 * 3), scratch_buf;
      resample_bilinear(src, 0, 0, x, y, whole.data(), &scratch_buf, order);
      resample_bilinear(window, -x0, -y0, x, y, part.data(), &scratch_buf, order);
      EXPECT_TRUE(whole == part) << p << " order " << int(order) << " max diff " << max_diff(whole, part);
    }
  }
}

// train224_u8 / val224 (fast decode) through the real pipeline — region decode, origins, flip, CHW — equal the same
// transforms computed from a whole-image decode, bit for bit.
TEST(VisionPipelineTest, RegionDecodedBatchesEqualWholeImageComputation) {
  SKIP_UNLESS_TOOLS(/*need_djpeg=*/false);
  auto dataset = ImageFolderDataset::open("photos", scratch().dir + "/photos");
  ASSERT_TRUE(dataset.ok()) << dataset.error().message();
  const int c = 224, n = 12;
  auto dec = std::move(ImageDecoder::create().value());
  for (VisionMode mode : {VisionMode::kTrain, VisionMode::kVal}) {
    auto pipeline = make_vision_pipeline(mode, /*normalize=*/false, *dataset, PipelineOptions{});
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().message();
    const size_t plane = size_t{c} * c;
    std::vector<char> slot(n * 3 * plane + 4096);
    const std::vector<uint64_t> offsets = {0, n * 3 * plane};
    std::vector<int64_t> indices(n);
    for (int i = 0; i < n; ++i) indices[i] = (i * 7) % static_cast<int>((*dataset)->size());
    const BatchContext context{11, 3, {}};
    ASSERT_TRUE((*pipeline)->run(indices, slot.data(), offsets, context).ok());
    for (int i = 0; i < n; ++i) {
      SCOPED_TRACE(args(mode == VisionMode::kTrain ? "train" : "val", (*dataset)->path(indices[i])));
      const std::vector<uint8_t> bytes = slurp((*dataset)->path(indices[i]));
      const ImageHeader h = dec->header(bytes, "x").value();
      std::vector<uint8_t> hwc(plane * 3), scratch_buf;
      RgbImage whole;
      bool flip = false;
      if (mode == VisionMode::kTrain) {
        SampleRng rng(context.seed, context.epoch, indices[i]);
        const CropBox box = random_resized_crop_params(h.width, h.height, rng);
        flip = rng.uniform(0.0, 1.0) < 0.5;
        const Scale s = dec->choose_scale(h, box.width, box.height, c, c);
        ASSERT_TRUE(dec->decode(bytes, "x", h, s, &whole, true).ok());
        const double sx = double(whole.width) / h.width, sy = double(whole.height) / h.height;
        const double x0 = box.left * sx, x1 = (box.left + box.width) * sx;
        const double y0 = box.top * sy, y1 = (box.top + box.height) * sy;
        const int rx = int(std::floor(x0)), ry = int(std::floor(y0));
        const int rw = std::min(whole.width, int(std::ceil(x1))) - rx;
        const int rh = std::min(whole.height, int(std::ceil(y1))) - ry;
        resample_bilinear(whole, rx, ry, {rw, x0 - rx, std::min(x1 - rx, double(rw)), c, 0, c},
                          {rh, y0 - ry, std::min(y1 - ry, double(rh)), c, 0, c}, hwc.data(), &scratch_buf,
                          ResampleOrder::kFast);
      } else {
        int nw = 0, nh = 0;
        resize_shorter_side(h.width, h.height, 256, &nw, &nh);
        ASSERT_TRUE(dec->decode(bytes, "x", h, dec->choose_scale(h, h.width, h.height, nw, nh), &whole, true).ok());
        resample_bilinear(whole, 0, 0, {whole.width, 0.0, double(whole.width), nw, center_crop_offset(nw, c), c},
                          {whole.height, 0.0, double(whole.height), nh, center_crop_offset(nh, c), c}, hwc.data(),
                          &scratch_buf, ResampleOrder::kFast);
      }
      const auto* got = reinterpret_cast<const uint8_t*>(slot.data()) + i * 3 * plane;
      int mismatches = 0;
      for (int ch = 0; ch < 3; ++ch) {
        for (int y = 0; y < c; ++y) {
          for (int x = 0; x < c; ++x) {
            const int sxp = flip ? c - 1 - x : x;
            mismatches += got[ch * plane + y * c + x] != hwc[(size_t(y) * c + sxp) * 3 + ch];
          }
        }
      }
      EXPECT_EQ(mismatches, 0);
      EXPECT_EQ(reinterpret_cast<const int64_t*>(slot.data() + offsets[1])[i], (*dataset)->label(indices[i]));
    }
  }
}

TEST(RandomResizedCropTest, BoxesFollowTorchvisionRanges) {
  const double total = 500.0 * 375.0;
  double min_area = 2, max_area = 0, min_ratio = 2, max_ratio = 0;
  for (int64_t i = 0; i < 20000; ++i) {
    SampleRng rng(42, 3, i);
    const CropBox b = random_resized_crop_params(500, 375, rng);
    ASSERT_TRUE(b.left >= 0 && b.top >= 0 && b.width > 0 && b.height > 0 && b.left + b.width <= 500 &&
                b.top + b.height <= 375) << i << ": " << b.left << "," << b.top << " " << b.width << "x" << b.height;
    // w and h are rounded from reals W, H with W*H in [0.08, 1] * total and W/H in [3/4, 4/3]; |w-W|, |h-H| <= 1/2.
    const double w = b.width, h = b.height;
    ASSERT_GE((w + 0.5) * (h + 0.5), 0.08 * total) << i;
    ASSERT_LE((w - 0.5) * (h - 0.5), total) << i;
    ASSERT_GE((w + 0.5) / (h - 0.5), 3.0 / 4.0) << i;
    ASSERT_LE((w - 0.5) / (h + 0.5), 4.0 / 3.0) << i;
    min_area = std::min(min_area, w * h / total), max_area = std::max(max_area, w * h / total);
    min_ratio = std::min(min_ratio, w / h), max_ratio = std::max(max_ratio, w / h);
  }
  // The draws span the ranges rather than sitting in a corner of them.
  EXPECT_LT(min_area, 0.085);
  EXPECT_GT(max_area, 0.9);
  EXPECT_LT(min_ratio, 0.76);
  EXPECT_GT(max_ratio, 1.32);
}

TEST(RandomResizedCropTest, SameKeysSameBoxOtherIndexOtherBox) {
  auto box = [](uint64_t seed, uint64_t epoch, int64_t index) {
    SampleRng rng(seed, epoch, index);
    const CropBox b = random_resized_crop_params(500, 375, rng);
    return std::tuple{b.left, b.top, b.width, b.height};
  };
  int same_index = 0, same_epoch = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ(box(7, 1, i), box(7, 1, i));
    same_index += box(7, 1, i) == box(7, 1, i + 1);
    same_epoch += box(7, 1, i) == box(7, 2, i);
  }
  EXPECT_LT(same_index, 10);
  EXPECT_LT(same_epoch, 10);
  EXPECT_NE(box(7, 1, 0), box(8, 1, 0));
}

TEST(RandomResizedCropTest, ExtremeAspectFallsBackToTorchvisionCentralCrop) {
  SampleRng rng(1, 0, 0);
  const CropBox wide = random_resized_crop_params(1000, 10, rng);
  EXPECT_EQ(std::tuple(wide.left, wide.top, wide.width, wide.height), std::tuple((1000 - 13) / 2, 0, 13, 10));
  const CropBox tall = random_resized_crop_params(10, 1000, rng);
  EXPECT_EQ(std::tuple(tall.left, tall.top, tall.width, tall.height), std::tuple(0, (1000 - 13) / 2, 10, 13));
}

TEST(RandomResizedCropTest, ResizeAndCenterCropGeometryMatchTorchvision) {
  int w = 0, h = 0;
  resize_shorter_side(500, 375, 256, &w, &h);
  EXPECT_EQ(std::pair(w, h), std::pair(341, 256));
  resize_shorter_side(375, 500, 256, &w, &h);
  EXPECT_EQ(std::pair(w, h), std::pair(256, 341));
  EXPECT_EQ(center_crop_offset(341, 224), 58);  // round(58.5) == 58: half to even
  EXPECT_EQ(center_crop_offset(342, 224), 59);
  EXPECT_EQ(center_crop_offset(343, 224), 60);  // round(59.5) == 60
  EXPECT_EQ(center_crop_offset(224, 224), 0);
}

}  // namespace
}  // namespace batchd::daemon
