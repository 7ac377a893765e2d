// Member names split into key and extension exactly as webdataset's base_plus_ext regex does (the expected values
// are what Python's re gives for ^((?:.*/|)[^.]+)[.]([^/]*)$), and metadata members are recognized.
#include "data/sample_grouper.h"

#include <gtest/gtest.h>

namespace batchd::daemon {
namespace {

TEST(SampleGrouperTest, SplitsNamesAsWebdatasetsRegex) {
  const std::vector<std::tuple<std::string, std::string, std::string>> matching = {
      {"a.jpg", "a", "jpg"},           {"x/.hidden.jpg", "x/", "hidden.jpg"}, {"dir.x/y.jpg", "dir.x/y", "jpg"},
      {"x//.c", "x//", "c"},           {"/.a", "/", "a"},                     {"a/b.C.D", "a/b", "C.D"},
      {"x/..jpg", "x/", ".jpg"},       {"a/./b.jpg", "a/./b", "jpg"},         {"x.", "x", ""},
  };
  for (const auto& [name, key, ext] : matching) {
    const KeyExtension ke = split_member_name(name);
    ASSERT_TRUE(ke.ok) << name;
    EXPECT_EQ(ke.key, key) << name;
    EXPECT_EQ(ke.extension, ext) << name;
  }
  for (const char* name : {"a.b/.c", "noext", ".a", "a/b/"}) EXPECT_FALSE(split_member_name(name).ok) << name;
}

TEST(SampleGrouperTest, MetadataMembersAreThoseWebdatasetSkips) {
  for (const char* name : {"__key__", "__meta__/a.jpg", "__a.b__"}) EXPECT_TRUE(is_metadata_member(name)) << name;
  for (const char* name : {"___", "__a", "a/__b__", "x__y__"}) EXPECT_FALSE(is_metadata_member(name)) << name;
}

TEST(SampleGrouperTest, ConsecutiveMembersOfAKeyFormOneSample) {
  const SampleFields fields = SampleFields::parse("JPG;png", "Cls");
  EXPECT_EQ(fields.image, (std::vector<std::string>{"jpg", "png"}));
  EXPECT_EQ(fields.label, "cls");
  ShardIndex out;
  SampleGrouper sut(fields, "s.tar", &out);
  ASSERT_TRUE(sut.add("k1.png", 0, 512, 10).ok());
  ASSERT_TRUE(sut.add("k1.jpg", 1024, 1536, 20).ok());
  ASSERT_TRUE(sut.add("k1.cls", 2048, 2560, 1).ok());
  ASSERT_TRUE(sut.add("k2.json", 3072, 3584, 5).ok());
  ASSERT_TRUE(sut.add("k2.jpg", 4096, 4608, 7).ok());
  auto duplicate = sut.add("k2.JSON", 5120, 5632, 5);
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(duplicate.error().message(), "s.tar: member 'k2.JSON' (header at offset 5120) is a second .json member "
                                         "of sample 'k2' (webdataset refuses this too); rewrite the shard with one "
                                         "member per extension and key");
  sut.finish();
  ASSERT_EQ(out.samples(), 2u);
  EXPECT_EQ(out.keys, "k1k2");
  EXPECT_EQ(out.image_offset[0], 1536u) << "jpg comes first in image_field";
  EXPECT_EQ(out.image_size[0], 20u);
  EXPECT_EQ(out.label_offset[0], 2560u);
  EXPECT_EQ(out.image_offset[1], 4608u);
  EXPECT_EQ(out.label_size[1], kMissingField);
  EXPECT_EQ(out.label_offset[1], 3072u) << "the sample's first header";
  ShardIndex big;
  SampleGrouper huge(fields, "s.tar", &big);
  EXPECT_FALSE(huge.add("k.jpg", 0, 512, uint64_t{1} << 32).ok()) << "a field of 4 GiB is refused";
  EXPECT_TRUE(huge.add("k.npy", 0, 512, uint64_t{1} << 32).ok()) << "a field batchd does not read may be large";
}

}  // namespace
}  // namespace batchd::daemon
