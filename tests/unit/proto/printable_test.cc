// printable (batchd/wire/printable.h): control characters, backslashes, C1 controls, line separators and bytes that
// are not UTF-8 escaped; everything else as it is; the result is valid UTF-8 (bounded_utf8 leaves it unchanged).
#include "batchd/wire/printable.h"

#include <gtest/gtest.h>

#include "batchd/wire/utf8.h"

namespace batchd::wire {
namespace {

TEST(WirePrintable, PlainTextIsUnchanged) {
  EXPECT_EQ(printable(""), "");
  EXPECT_EQ(printable("s3://bkt/train/shard-000.tar ~!@#$%^&*()"), "s3://bkt/train/shard-000.tar ~!@#$%^&*()");
  EXPECT_EQ(printable("é€😀"), "é€😀");
}

TEST(WirePrintable, ControlsAndBackslashAreEscaped) {
  EXPECT_EQ(printable("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(printable(std::string("\0\x1b[2J\x7f", 6)), "\\x00\\x1b[2J\\x7f");
  EXPECT_EQ(printable("a\\nb"), "a\\\\nb");  // an escaped text cannot pose as another one
}

TEST(WirePrintable, C1ControlsSeparatorsAndBadBytesAreEscaped) {
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\u009b31m");             // CSI
  EXPECT_EQ(printable("\xc2\x85" "x"), "\\u0085x");                  // NEL
  EXPECT_EQ(printable("a\xe2\x80\xa8" "b\xe2\x80\xa9"), "a\\u2028b\\u2029");
  EXPECT_EQ(printable("a\xff" "b\xc3"), "a\\xffb\\xc3");
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
}

TEST(WirePrintable, TheResultIsOneLineOfValidUtf8) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  const std::string out = printable(all + "\xe2\x82\xac" + all);
  EXPECT_EQ(bounded_utf8(out, out.size()), out);
  for (char c : out) EXPECT_FALSE((c >= 0 && c < 0x20) || c == 0x7f) << out;
}

}  // namespace
}  // namespace batchd::wire
