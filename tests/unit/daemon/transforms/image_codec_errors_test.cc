// Image decoding of bad input: corrupt headers, missing tables, fatal errors after warnings, truncated and junk
// files. Each is a data error naming the file and the reason, and never lets an earlier image's state show through
// (several were found by tests/fuzz/fuzz_decode.cc). Inputs are real photographs made at run time
// (image_test_support.h); the decoding against reference tools is image_codec_test.cc.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "transforms/kernels/image_decoder.h"
#include "transforms/kernels/vision_transforms.h"

#include "image_test_support.h"

namespace batchd::daemon {
namespace {

using namespace batchd::daemon::image_test;  // NOLINT

TEST(ImageCodecTest, ACorruptHeaderDoesNotBreakTheNextImage) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
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

// A JPEG without its quantization table is an error, as in PIL, whatever the worker decoded before: TurboJPEG
// keeps the tables of earlier images in its handle, and such a file decoded with the previous image's (found by
// fuzz_decode). The fast region path (a fresh libjpeg decompressor per image) agrees.
TEST(ImageCodecTest, AJpegMissingATableNeverUsesAnEarlierImages) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  std::vector<uint8_t> jpeg = slurp(scratch().photos[0]);
  const std::vector<uint8_t> dqt = {0xFF, 0xDB};
  for (auto at = std::search(jpeg.begin(), jpeg.end(), dqt.begin(), dqt.end()); at != jpeg.end();
       at = std::search(jpeg.begin(), jpeg.end(), dqt.begin(), dqt.end())) {
    jpeg.erase(at, at + 2 + (at[2] << 8 | at[3]));  // the marker and its segment
  }
  spit(tmp("nodqt.jpg"), jpeg);
  auto dec = std::move(ImageDecoder::create().value());
  const ImageHeader hdr = dec->header(jpeg, "nodqt.jpg").value();
  for (const std::string& before : {std::string(), scratch().photos[1], scratch().photos[2]}) {
    SCOPED_TRACE("after " + (before.empty() ? "nothing" : before));
    RgbImage out;
    if (!before.empty()) {
      const std::vector<uint8_t> good = slurp(before);
      ASSERT_TRUE(dec->decode(good, before, dec->header(good, before).value(), {1, 1}, &out).ok());
    }
    for (bool fast : {false, true}) {
      const Status st = dec->decode(jpeg, "nodqt.jpg", hdr, {1, 1}, &out, fast);
      ASSERT_FALSE(st.ok()) << "decoded with another image's quantization table";
      EXPECT_EQ(st.error().message(), "nodqt.jpg: corrupt JPEG (Quantization table 0x00 was not defined)");
    }
    PixelRect at;
    EXPECT_FALSE(dec->decode_region(jpeg, "nodqt.jpg", hdr, {1, 2}, {10, 10, 50, 50}, &out, &at, true).ok());
  }
}

// A fatal error after a warning is an error on every path (TurboJPEG 2.1 reports it as a warning), naming the file
// and libjpeg's reason; the same error without the warning too.
void expect_fatal_after_warning_fails(const std::vector<uint8_t>& good, const std::string& name) {
  const std::vector<uint8_t> dqt = {0xFF, 0xDB}, sos = {0xFF, 0xDA};
  for (bool with_warning : {true, false}) {
    std::vector<uint8_t> jpeg = good;
    if (with_warning) jpeg.insert(std::search(jpeg.begin(), jpeg.end(), dqt.begin(), dqt.end()), {0x00, 0x11, 0x22});
    const size_t scan = std::search(jpeg.begin(), jpeg.end(), sos.begin(), sos.end()) - jpeg.begin();
    const size_t at = scan + (jpeg.size() - scan) * 7 / 10;
    jpeg.insert(jpeg.begin() + static_cast<long>(at), {0xFF, 0x28, 0x00, 0x00});  // a marker libjpeg refuses
    const std::string path = tmp(name + (with_warning ? "_warn_fatal.jpg" : "_fatal.jpg"));
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

TEST(ImageCodecTest, AFatalErrorAfterAWarningFailsOnEveryPath) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  expect_fatal_after_warning_fails(slurp(scratch().photos[0]), "ycc");
}

// The same for a CMYK JPEG (TurboJPEG decodes those, libjpeg's region decoder does not): it "decoded", its rows
// after the error holding the previous image's pixels (found by fuzz_decode).
TEST(ImageCodecTest, AFatalErrorAfterAWarningFailsForCmykToo) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
  ASSERT_EQ(sh(helper(args("cmyk", scratch().photos[0], tmp("fcmyk.jpg"), tmp("fcmyk.raw")))), 0);
  expect_fatal_after_warning_fails(slurp(tmp("fcmyk.jpg")), "cmyk");
  // The warning alone (junk bytes before a marker) is still tolerated, with the clean file's pixels.
  std::vector<uint8_t> junk = slurp(tmp("fcmyk.jpg"));
  const std::vector<uint8_t> dqt = {0xFF, 0xDB};
  junk.insert(std::search(junk.begin(), junk.end(), dqt.begin(), dqt.end()), {0x00, 0x11, 0x22});
  spit(tmp("fcmyk_junk.jpg"), junk);
  RgbImage clean, tolerated;
  ASSERT_TRUE(decode_file(tmp("fcmyk.jpg"), {1, 1}, &clean).ok());
  const Status st = decode_file(tmp("fcmyk_junk.jpg"), {1, 1}, &tolerated);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_TRUE(tolerated.pixels == clean.pixels);
}

TEST(ImageCodecTest, BadInputIsADataErrorNamingFileAndReason) {
  REQUIRE_TOOLS(/*need_djpeg=*/false);
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

TEST(ImageCodecTest, ANonImageIsRefusedWithoutQuotingItsBytes) {
  // A file swapped for another would otherwise show its first bytes in the stream's error (issue 23, finding 6).
  spit(tmp("secret.jpg"), {'S', 'E', 'C', 'R', 'E', 'T', '\n'});
  RgbImage out;
  const Status st = decode_file(tmp("secret.jpg"), {1, 1}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("not a JPEG or PNG image"), std::string::npos) << st.error().message();
  for (const char* leak : {"53 45 43 52", "SECR"}) {
    EXPECT_EQ(st.error().message().find(leak), std::string::npos) << st.error().message();
  }
}

// libjpeg reports only the first warning of a decode: junk bytes before a marker are tolerated (as PIL does), but
// they must not hide a truncation that follows them.
TEST(ImageCodecTest, JunkBytesAreToleratedButDoNotHideATruncation) {
  REQUIRE_TOOLS(/*need_djpeg=*/true);
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



}  // namespace
}  // namespace batchd::daemon
