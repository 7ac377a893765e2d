// The shard indexer (data/tar_index.h) on shards written by GNU tar and Python's tarfile: the recorded offsets hold
// the members' bytes (long names and PAX headers put blocks between header and data), and every bad shard is
// refused naming the file and the offset.
#include "data/tar_index.h"

#include <gtest/gtest.h>

#include "tar_writers.h"

namespace batchd::daemon {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::file_bytes;
using testing::Member;
using testing::ScratchDir;

const SampleFields kFields = SampleFields::parse("jpg;jpeg;png", "cls");

std::string key_of(const ShardIndex& s, size_t j) {
  const uint32_t begin = j == 0 ? 0 : s.key_end[j - 1];
  return s.keys.substr(begin, s.key_end[j] - begin);
}

// Samples whose keys are long (over 100 bytes with their directory), each a .jpg, a .cls and a .json.
std::vector<Member> long_name_samples(const std::string& extra_key = "") {
  std::vector<Member> members;
  const std::string dir = std::string(70, 'd') + "/" + std::string(40, 'e');
  for (unsigned k = 0; k < 5; ++k) {
    const std::string key = dir + "/sample_" + std::to_string(k) + (k == 3 ? extra_key : "");
    members.push_back({key + ".jpg", bytes_of(700 + 977 * k, k)});
    members.push_back({key + ".cls", std::to_string(k * 3)});
    members.push_back({key + ".json", "{\"k\": " + std::to_string(k) + "}"});
  }
  return members;
}

// Every indexed field's bytes, read at the recorded offset, are the member's content.
void expect_offsets_hold_the_members(const std::string& shard, const std::vector<Member>& members,
                                     const ShardIndex& index) {
  ASSERT_EQ(index.samples() * 3, members.size());
  for (size_t j = 0; j < index.samples(); ++j) {
    const std::string& image = members[3 * j].content;
    const std::string& label = members[3 * j + 1].content;
    EXPECT_EQ(key_of(index, j) + ".jpg", members[3 * j].name);
    ASSERT_EQ(index.image_size[j], image.size());
    ASSERT_EQ(index.label_size[j], label.size());
    EXPECT_TRUE(file_bytes(shard, index.image_offset[j], image.size()) == image) << "sample " << j;
    EXPECT_EQ(file_bytes(shard, index.label_offset[j], label.size()), label) << "sample " << j;
  }
  EXPECT_TRUE(index.consistent());
}

TEST(TarIndexTest, GnuTarLongNamesOffsetsComeFromTheReader) {
  ScratchDir dir("tar-index-gnu");
  const auto members = long_name_samples();
  ASSERT_GT(members[0].name.size(), 100u) << "a ././@LongLink block precedes each header";
  testing::gnu_tar(dir / "gnu.tar", members);
  auto index = index_shard(dir / "gnu.tar", kFields);
  ASSERT_TRUE(index.ok()) << index.error().message();
  expect_offsets_hold_the_members(dir / "gnu.tar", members, *index);
  // "header + 512" would point into the long-name blocks: the first member's data starts 3 blocks in.
  EXPECT_EQ(index->image_offset[0], 3u * 512) << "LongLink header, its name block, then the member's header";
}

TEST(TarIndexTest, PythonTarfilePaxLongAndNonAsciiNames) {
  ScratchDir dir("tar-index-pax");
  const auto members = long_name_samples("_ключ_é");
  testing::python_tar(dir / "pax.tar", members);  // tarfile's default format: PAX
  auto index = index_shard(dir / "pax.tar", kFields);
  ASSERT_TRUE(index.ok()) << index.error().message();
  expect_offsets_hold_the_members(dir / "pax.tar", members, *index);
  EXPECT_GT(index->image_offset[0], 512u) << "a PAX extended header comes first";
  EXPECT_NE(key_of(*index, 3).find("_ключ_é"), std::string::npos) << "the key is the name in UTF-8";

  testing::python_tar(dir / "ustar.tar", {{"a.jpg", "x"}, {"a.cls", "1"}}, "ustar");
  auto plain = index_shard(dir / "ustar.tar", kFields);
  ASSERT_TRUE(plain.ok()) << plain.error().message();
  EXPECT_EQ(plain->image_offset[0], 512u);
  EXPECT_EQ(plain->label_offset[0], 3u * 512);
}

TEST(TarIndexTest, TruncatedShardsNameTheFileAndTheOffset) {
  ScratchDir dir("tar-index-truncated");
  const auto members = long_name_samples();
  testing::python_tar(dir / "good.tar", members, "gnu");
  auto good = index_shard(dir / "good.tar", kFields);
  ASSERT_TRUE(good.ok());
  // Cut inside the last image's data, then inside a header.
  const uint64_t cut_in_data = good->image_offset[4] + 100;
  const uint64_t cut_in_header = good->image_offset[4] - 1024 + 100;
  for (uint64_t cut : {cut_in_data, cut_in_header}) {
    const std::string shard = dir / ("cut-" + std::to_string(cut) + ".tar");
    std::ofstream(shard, std::ios::binary) << file_bytes(dir / "good.tar", 0, cut);
    auto index = index_shard(shard, kFields);
    ASSERT_FALSE(index.ok()) << "cut at " << cut;
    EXPECT_EQ(index.error().code(), ErrorCode::kDataError);
    const std::string& m = index.error().message();
    EXPECT_NE(m.find(shard), std::string::npos) << m;
    EXPECT_NE(m.find("offset"), std::string::npos) << m;
    if (cut == cut_in_data) {
      EXPECT_NE(m.find("is truncated"), std::string::npos) << m;
      EXPECT_NE(m.find("from offset " + std::to_string(good->image_offset[4])), std::string::npos) << m;
      EXPECT_NE(m.find("file ends at " + std::to_string(cut)), std::string::npos) << m;
    }
  }
}

TEST(TarIndexTest, NonTarEmptyAndCompressedFilesAreRefused) {
  ScratchDir dir("tar-index-bad");
  std::ofstream(dir / "text.tar") << std::string(3000, 'x');
  std::ofstream(dir / "empty.tar");
  testing::python_tar(dir / "plain.tar", {{"a.jpg", "x"}, {"a.cls", "1"}});
  ASSERT_EQ(std::system(("gzip -c " + dir / "plain.tar" + " > " + dir / "packed.tar").c_str()), 0);
  for (const char* name : {"text.tar", "empty.tar"}) {
    auto index = index_shard(dir / name, kFields);
    ASSERT_FALSE(index.ok()) << name;
    EXPECT_EQ(index.error().code(), ErrorCode::kDataError);
    EXPECT_NE(index.error().message().find(dir / name + " is not a tar file"), std::string::npos)
        << index.error().message();
  }
  auto packed = index_shard(dir / "packed.tar", kFields);
  ASSERT_FALSE(packed.ok());
  EXPECT_NE(packed.error().message().find(dir / "packed.tar is a compressed tar (gzip)"), std::string::npos)
      << packed.error().message();
  auto missing = index_shard(dir / "nope.tar", kFields);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST(TarIndexTest, SparseMembersAreRefused) {
  ScratchDir dir("tar-index-sparse");
  const std::string tree = dir / "tree";
  fs::create_directories(tree);
  ASSERT_EQ(std::system(("truncate -s 1M " + tree + "/a.jpg && echo tail >> " + tree + "/a.jpg && echo 1 > " + tree +
                         "/a.cls && tar --format=gnu --sparse -cf " + dir / "sparse.tar" + " -C " + tree + " a.jpg a.cls")
                            .c_str()),
            0);
  auto index = index_shard(dir / "sparse.tar", kFields);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.error().message().find("member 'a.jpg' (header at offset 0) is a sparse file"), std::string::npos)
      << index.error().message();
}

TEST(TarIndexTest, SamplesWithoutImageOrLabelStayInTheIndex) {
  ScratchDir dir("tar-index-missing");
  testing::python_tar(dir / "s.tar", {{"a.jpg", "A"}, {"a.cls", "1"},     // complete
                                      {"b.cls", "2"},                      // no image
                                      {"c.png", "C"},                      // no label
                                      {"d.txt", "D"},                      // neither
                                      {"e.PNG", "E1"}, {"e.JPG", "E2"}, {"e.cls", "5"}},
                     "ustar");
  auto index = index_shard(dir / "s.tar", kFields);
  ASSERT_TRUE(index.ok()) << index.error().message();
  ASSERT_EQ(index->samples(), 5u);
  EXPECT_EQ(index->keys, "abcde");
  EXPECT_EQ(index->image_size[1], kMissingField);
  EXPECT_EQ(index->image_offset[1], 4u * 512) << "a missing field points at the sample's first header";
  EXPECT_NE(index->label_size[1], kMissingField);
  EXPECT_EQ(index->label_size[2], kMissingField);
  EXPECT_EQ(index->image_size[3], kMissingField);
  EXPECT_EQ(index->label_size[3], kMissingField);
  // Extensions are lower-cased; the image is the first of image_field's extensions the sample has.
  EXPECT_EQ(file_bytes(dir / "s.tar", index->image_offset[4], index->image_size[4]), "E2");
  auto png_first = index_shard(dir / "s.tar", SampleFields::parse("png;jpg", "cls"));
  ASSERT_TRUE(png_first.ok());
  EXPECT_EQ(file_bytes(dir / "s.tar", png_first->image_offset[4], png_first->image_size[4]), "E1");
}

TEST(TarIndexTest, ADuplicateExtensionInASampleIsRefused) {
  ScratchDir dir("tar-index-duplicate");
  testing::python_tar(dir / "s.tar", {{"a.jpg", "A"}, {"a.cls", "1"}, {"a.JPG", "again"}}, "ustar");
  auto index = index_shard(dir / "s.tar", kFields);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.error().code(), ErrorCode::kDataError);
  EXPECT_NE(index.error().message().find(dir / "s.tar: member 'a.JPG' (header at offset 2048) is a second .jpg "
                                                 "member of sample 'a'"),
            std::string::npos)
      << index.error().message();
}

TEST(TarIndexTest, GroupingFollowsWebdatasetsGroupByKeys) {
  ScratchDir dir("tar-index-grouping");
  testing::python_tar(dir / "s.tar", {{"x/a.jpg", "1"}, {"x/a.cls", "1"},
                                      {"__key__", "meta"}, {"__meta__/a.jpg", "meta"},  // webdataset skips these
                                      {"noextension", "?"},                              // no key: skipped
                                      {"x.y/b.seg.jpg", "2"}, {"x.y/b.cls", "2"},         // key x.y/b, ext seg.jpg
                                      {"x/a.png", "3"}});  // x/a again, not consecutive: a sample of its own
  auto index = index_shard(dir / "s.tar", kFields);
  ASSERT_TRUE(index.ok()) << index.error().message();
  ASSERT_EQ(index->samples(), 3u);
  EXPECT_EQ(key_of(*index, 0), "x/a");
  EXPECT_EQ(key_of(*index, 1), "x.y/b");
  EXPECT_EQ(index->image_size[1], kMissingField) << "seg.jpg is not jpg";
  EXPECT_EQ(key_of(*index, 2), "x/a");
}

TEST(TarIndexTest, ACancelledIndexStops) {
  ScratchDir dir("tar-index-cancel");
  testing::python_tar(dir / "s.tar", long_name_samples());
  std::atomic<bool> cancel{true};
  auto index = index_shard(dir / "s.tar", kFields, &cancel);
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.error().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace batchd::daemon
