// image_test_support.h — shared by the image tests (codec, resample, vision pipeline): a private scratch dir with
// 20 real photographs (../shared/data/make_imagefolder.py beside the checkout, python3-skimage) and a Pillow helper
// script (Pillow through BATCHD_PYTHON, the project venv's Python), made once per test binary; file and command helpers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "transforms/kernels/image_decoder.h"

namespace batchd::daemon::image_test {

namespace fs = std::filesystem;
inline constexpr const char* kPy = BATCHD_PYTHON;  // tests/CMakeLists.txt: the project venv's Python

// Pillow-side helpers, one subcommand per reference computation; every output is raw RGB bytes.
inline constexpr const char* kHelper = R"PY(import sys
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
elif a[0] == 'filter':  # raw w h dst W H nearest|bilinear|bicubic [x0 y0 x1 y1]
    f = {'nearest': Image.NEAREST, 'bilinear': Image.BILINEAR, 'bicubic': Image.BICUBIC}[a[7]]
    box = tuple(float(v) for v in a[8:12]) if len(a) > 8 else None
    open(a[4], 'wb').write(raw(*a[1:4]).resize((int(a[5]), int(a[6])), f, box=box).tobytes())
elif a[0] == 'crop':  # raw w h dst l t r b W H
    c = raw(*a[1:4]).crop(tuple(int(v) for v in a[5:9]))
    open(a[4], 'wb').write(c.resize((int(a[9]), int(a[10])), Image.BILINEAR).tobytes())
elif a[0] == 'window':  # raw w h dst W H l t -> resize to WxH, then the 224x224 crop at (l, t)
    l, t = int(a[7]), int(a[8])
    r = raw(*a[1:4]).resize((int(a[5]), int(a[6])), Image.BILINEAR).crop((l, t, l + 224, t + 224))
    open(a[4], 'wb').write(r.tobytes())
)PY";

inline int sh(const std::string& cmd) { return std::system(cmd.c_str()); }
// Its arguments, numbers printed by std::to_string, joined by spaces.
template <typename... T>
inline std::string args(const T&... v) {
  std::string out;
  ((out += (out.empty() ? "" : " ") + [](const auto& x) {
     if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>) return std::to_string(x);
     else return std::string(x);
   }(v)), ...);
  return out;
}
inline bool have_tool(const std::string& t) { return sh("command -v " + t + " >/dev/null 2>&1") == 0; }

inline std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}
inline void spit(const std::string& path, const std::vector<uint8_t>& b) {
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
      why_not = std::string("no PIL in ") + kPy + " (./setup.sh --tests makes the venv)";
    } else if (!fs::exists(maker)) {
      why_not = maker + " is missing (shared/ must sit beside the checkout)";
    } else if (sh(args(kPy, maker, dir + "/photos", 20, 1, ">/dev/null")) != 0) {
      why_not = std::string("make_imagefolder.py failed in ") + kPy + " (it needs Pillow and scikit-image)";
    } else {
      for (const auto& e : fs::recursive_directory_iterator(dir + "/photos"))
        if (e.path().extension() == ".jpg") photos.push_back(e.path().string());
      std::sort(photos.begin(), photos.end());
      if (photos.size() < 5) why_not = "make_imagefolder.py made fewer than 5 photographs";
    }
  }
  ~Scratch() { std::error_code ec; fs::remove_all(dir, ec); }
};
inline Scratch& scratch() { static Scratch s; return s; }
inline std::string tmp(const std::string& name) { return scratch().dir + "/" + name; }
inline std::string helper(const std::string& a) { return args(kPy, tmp("helper.py"), a); }

// Why the tests cannot run here, or "" when they can. A missing reference (the venv's Pillow, djpeg) fails the test:
// ./setup.sh --tests installs them all, so a skip would only hide a broken set-up.
inline std::string missing(bool need_djpeg) {
  if (need_djpeg && !(have_tool("djpeg") && have_tool("cjpeg"))) return "no djpeg/cjpeg (Debian: libjpeg-turbo-progs)";
  return scratch().why_not;
}
#define REQUIRE_TOOLS(need_djpeg) \
  if (const std::string why = missing(need_djpeg); !why.empty()) FAIL() << why


// Decodes `path` at `scale`; the Status is returned so that error tests can inspect it.
inline Status decode_file(const std::string& path, Scale scale, RgbImage* out, ImageHeader* hdr_out = nullptr,
                   bool fast = false) {
  static std::unique_ptr<ImageDecoder> dec = std::move(ImageDecoder::create().value());
  const std::vector<uint8_t> bytes = slurp(path);
  auto hdr = dec->header(bytes, path);
  if (!hdr.ok()) return hdr.error();
  if (hdr_out != nullptr) *hdr_out = *hdr;
  return dec->decode(bytes, path, *hdr, scale, out, fast);
}

// Decodes `path` at full size into *src and writes its pixels to tmp("src.raw"), where the Pillow helper reads them.
inline Status decode_to_src_raw(const std::string& path, RgbImage* src) {
  Status st = decode_file(path, {1, 1}, src);
  if (st.ok()) spit(tmp("src.raw"), src->pixels);
  return st;
}

inline int max_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  int m = a.size() == b.size() ? 0 : 256;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(int{a[i]} - int{b[i]}));
  return m;
}


}  // namespace batchd::daemon::image_test
