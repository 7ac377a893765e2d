// `shards` patterns: brace expansion as Python's braceexpand (the expected lists are its output), then globs and
// existing files, in pattern order; missing shards, empty globs, duplicates and huge expansions refused by name.
#include "base/shard_spec.h"

#include <gtest/gtest.h>

#include "tar_writers.h"

namespace batchd::daemon {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

Strings expand(const std::string& pattern) {
  auto out = brace_expand(pattern);
  EXPECT_TRUE(out.ok()) << pattern << ": " << out.error().message();
  return out.ok() ? *out : Strings{};
}

TEST(ShardSpecTest, BraceExpansionMatchesPythonsBraceexpand) {
  EXPECT_EQ(expand("shard-{000000..000003}.tar"),
            (Strings{"shard-000000.tar", "shard-000001.tar", "shard-000002.tar", "shard-000003.tar"}));
  EXPECT_EQ(expand("{8..11}"), (Strings{"8", "9", "10", "11"}));
  EXPECT_EQ(expand("{08..10}"), (Strings{"08", "09", "10"}));
  EXPECT_EQ(expand("{3..1}"), (Strings{"3", "2", "1"}));
  EXPECT_EQ(expand("{1..10..3}"), (Strings{"1", "4", "7", "10"}));
  EXPECT_EQ(expand("{2..-1}"), (Strings{"2", "1", "0", "-1"}));
  EXPECT_EQ(expand("{-01..1}"), (Strings{"-01", "000", "001"}));
  EXPECT_EQ(expand("{a..c}"), (Strings{"a", "b", "c"}));
  EXPECT_EQ(expand("{a,b}-{1..2}"), (Strings{"a-1", "a-2", "b-1", "b-2"}));
  EXPECT_EQ(expand("python{2.{5..7},3.{2,3}}"),
            (Strings{"python2.5", "python2.6", "python2.7", "python3.2", "python3.3"}));
  EXPECT_EQ(expand("index.html{,.backup}"), (Strings{"index.html", "index.html.backup"}));
  EXPECT_EQ(expand("{abc}"), (Strings{"{abc}"}));
  EXPECT_EQ(expand("x{a{1,2}}"), (Strings{"x{a1}", "x{a2}"}));
  EXPECT_EQ(expand(R"({1\{2,3})"), (Strings{"1{2", "3"}));
  EXPECT_EQ(expand("plain.tar"), (Strings{"plain.tar"}));
  for (const char* bad : {"{1{2,3}", "a}b{c,d}", "{", "}"}) {
    auto out = brace_expand(bad);
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_NE(out.error().message().find("unbalanced braces in '" + std::string(bad) + "'"), std::string::npos);
  }
}

TEST(ShardSpecTest, ExpansionIsCapped) {
  EXPECT_TRUE(brace_expand("{0..9}{0..9}", 100).ok());
  for (const char* big : {"{0..9}{0..9}{0..1}", "{0..100}", "{0..99999999999999}", "{a,b}{0..60}"}) {
    auto out = brace_expand(big, 100);
    ASSERT_FALSE(out.ok()) << big;
    EXPECT_NE(out.error().message().find("expands to more than 100 shards"), std::string::npos)
        << out.error().message();
  }
}

class ShardFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 4; ++i) std::ofstream(dir_ / ("s-" + std::to_string(i) + ".tar")) << "x";
    std::ofstream(dir_ / "other.txt") << "x";
    fs::create_directories(dir_.path() / "sub");
  }
  testing::ScratchDir dir_{"shard-spec"};
  const std::string key_ = "datasets.t.shards";
};

TEST_F(ShardFilesTest, PatternsExpandInOrderToAbsolutePaths) {
  auto out = expand_shards({dir_ / "s-{3..2}.tar", dir_ / "s-[01].tar"}, key_);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(*out, (Strings{dir_ / "s-3.tar", dir_ / "s-2.tar", dir_ / "s-0.tar", dir_ / "s-1.tar"}));
  auto globbed = expand_shards({dir_ / "*.tar"}, key_);
  ASSERT_TRUE(globbed.ok());
  EXPECT_EQ(*globbed, (Strings{dir_ / "s-0.tar", dir_ / "s-1.tar", dir_ / "s-2.tar", dir_ / "s-3.tar"}));
  auto dotted = expand_shards({dir_.path().string() + "/./sub/../s-0.tar"}, key_);
  ASSERT_TRUE(dotted.ok()) << dotted.error().message();
  EXPECT_EQ(*dotted, Strings{dir_ / "s-0.tar"}) << "normalized";
}

TEST_F(ShardFilesTest, MissingEmptyDuplicateAndTooManyAreRefusedNamingTheKey) {
  auto missing = expand_shards({dir_ / "s-{0..4}.tar"}, key_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("shard " + dir_ / "s-4.tar" + " does not exist (datasets.t.shards"),
            std::string::npos)
      << missing.error().message();
  auto empty = expand_shards({dir_ / "*.tgz"}, key_);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(empty.error().message().find("datasets.t.shards: '" + dir_ / "*.tgz" + "' matches no file"),
            std::string::npos)
      << empty.error().message();
  auto twice = expand_shards({dir_ / "s-0.tar", dir_ / "s-*.tar"}, key_);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(twice.error().message().find("names shard " + dir_ / "s-0.tar" + " twice"), std::string::npos);
  auto many = expand_shards({dir_ / "s-{0..3}.tar"}, key_, 3);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message().find("more than 3 shards"), std::string::npos);
  auto unbalanced = expand_shards({dir_ / "s-{0..3.tar"}, key_);
  ASSERT_FALSE(unbalanced.ok());
  EXPECT_NE(unbalanced.error().message().find("datasets.t.shards: unbalanced braces"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon
