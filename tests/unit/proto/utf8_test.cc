// bounded_utf8 (batchd/wire/utf8.h): what it returns is valid UTF-8 as protobuf's own parser judges it (the
// reference: a proto3 string field that it refuses makes the whole frame unreadable), cut at a character boundary,
// and unchanged when it was valid and short enough.
#include "batchd/wire/utf8.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "batchd.pb.h"

namespace batchd::wire {
namespace {

// Whether protobuf parses an Error whose message is `text` (it logs the refusal; that is expected here).
bool protobuf_accepts(const std::string& text) {
  Error e;
  e.set_message(text);
  Error back;
  return back.ParseFromString(e.SerializeAsString());
}

TEST(BoundedUtf8, ACutInsideACharacterEndsBeforeIt) {
  const std::string e_acute = "\xc3\xa9", euro = "\xe2\x82\xac", emoji = "\xf0\x9f\x98\x80";
  EXPECT_EQ(bounded_utf8("x" + e_acute + e_acute, 4), "x" + e_acute);  // not "x" + é + half of é
  EXPECT_EQ(bounded_utf8(euro + euro, 5), euro);
  EXPECT_EQ(bounded_utf8(emoji + emoji, 7), emoji);
  EXPECT_EQ(bounded_utf8(emoji, 3), "");
  EXPECT_FALSE(protobuf_accepts(("x" + e_acute + e_acute).substr(0, 4))) << "substr's cut, for contrast";
}

TEST(BoundedUtf8, ValidShortTextIsUnchanged) {
  const std::string text = "sample 7: ValueError: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf";
  EXPECT_EQ(bounded_utf8(text, text.size()), text);
  EXPECT_EQ(bounded_utf8("", 10), "");
  EXPECT_EQ(bounded_utf8("abc", 0), "");
}

TEST(BoundedUtf8, BytesOfNoWellFormedSequenceBecomeQuestionMarks) {
  EXPECT_EQ(bounded_utf8("a\xff" "b", 10), "a?b");
  EXPECT_EQ(bounded_utf8("\xc0\xaf", 10), "??");              // overlong '/'
  EXPECT_EQ(bounded_utf8("\xe0\x80\xaf", 10), "???");         // overlong
  EXPECT_EQ(bounded_utf8("\xed\xa0\x80", 10), "???");         // a surrogate
  EXPECT_EQ(bounded_utf8("\xf4\x90\x80\x80", 10), "????");    // above U+10FFFF
  EXPECT_EQ(bounded_utf8("\xc3", 10), "?");                   // a lead byte at the end
  EXPECT_EQ(bounded_utf8("\xe2\x82" "x", 10), "??x");         // a sequence cut short
}

TEST(BoundedUtf8, WhateverTheBytesProtobufAcceptsTheResult) {
  // protobuf logs each string it refuses: thousands of lines here.
  auto* logger = google::protobuf::SetLogHandler(nullptr);
  std::mt19937 random(26);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 64);
  for (int i = 0; i < 20000; ++i) {
    std::string text(static_cast<size_t>(length(random)), '\0');
    for (char& c : text) c = static_cast<char>(i % 2 ? byte(random) : 0x80 + byte(random) % 0x78);
    const size_t max = static_cast<size_t>(length(random));
    const std::string out = bounded_utf8(text, max);
    ASSERT_LE(out.size(), max);
    ASSERT_TRUE(protobuf_accepts(out)) << "input of " << text.size() << " bytes, case " << i;
    if (protobuf_accepts(text) && text.size() <= max) {
      ASSERT_EQ(out, text);
    }
  }
  google::protobuf::SetLogHandler(logger);
}

}  // namespace
}  // namespace batchd::wire
