// FingerprintBuilder (data/fingerprint.h): equal for copies of the same data in other directories with other mtimes,
// different when a name, a size or a byte it reads changes; a large dataset sampled from its sizes alone, and what
// that sample misses; names relative to the common directory; cancellation and errors naming the file.
#include "data/fingerprint.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "fingerprint_test_support.h"

namespace batchd::daemon {
namespace {

using fingerprint_test::FingerprintTest;
using fingerprint_test::flip_byte;

// The fingerprint of the files of `root`, named relative to it (sorted, as the formats list them).
Result<Fingerprint> of_tree(const std::filesystem::path& root, SamplePolicy policy = {}) {
  FingerprintBuilder builder("test", policy);
  for (const auto& name : fingerprint_test::files_under(root)) builder.add_file(name, (root / name).string());
  return builder.finish();
}

std::string hex_of(const std::filesystem::path& root, SamplePolicy policy = {}) {
  auto fp = of_tree(root, policy);
  EXPECT_TRUE(fp.ok()) << fp.error().message();
  return fp.ok() ? fp->hex : "";
}

TEST_F(FingerprintTest, ACopyElsewhereWithOtherMtimesHasTheSameFingerprint) {
  write("a/x/1.bin", std::string(1000, 'a'));
  write("a/x/2.bin", "second");
  write("a/y/3.bin", "");
  copy_with_other_mtimes("a", "elsewhere/deeper/b");
  auto a = of_tree(dir_ / "a");
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->hex.size(), 32u);
  EXPECT_EQ(a->hex.find_first_not_of("0123456789abcdef"), std::string::npos) << a->hex;
  EXPECT_EQ(a->hex, hex_of(dir_ / "elsewhere/deeper/b"));
  EXPECT_EQ(a->covers, "the names and sizes of 3 files (1006 bytes) and every byte of them");
}

TEST_F(FingerprintTest, AByteANameOrASizeChangesIt) {
  write("a/x/1.bin", std::string(1000, 'a'));
  write("a/x/2.bin", "second");
  const std::string original = hex_of(dir_ / "a");
  write("a/x/1.bin", std::string(999, 'a') + "b");  // one byte
  EXPECT_NE(hex_of(dir_ / "a"), original);
  write("a/x/1.bin", std::string(1000, 'a'));
  EXPECT_EQ(hex_of(dir_ / "a"), original) << "the same content again";
  std::filesystem::rename(dir_ / "a/x/2.bin", dir_ / "a/x/2.bim");  // one name
  EXPECT_NE(hex_of(dir_ / "a"), original);
  std::filesystem::rename(dir_ / "a/x/2.bim", dir_ / "a/x/2.bin");
  write("a/x/1.bin", std::string(1001, 'a'));  // one size
  EXPECT_NE(hex_of(dir_ / "a"), original);
  // The format and the parameters are part of it too.
  FingerprintBuilder tokens("tokens"), idx("idx"), param("tokens");
  param.add_param("seq_len", "8");
  EXPECT_NE(tokens.finish()->hex, idx.finish()->hex);
  FingerprintBuilder again("tokens");
  EXPECT_NE(param.finish()->hex, again.finish()->hex);
}

// Ten files of 40 KiB with a budget of 64 KiB: files 0, 3, 6 and 9 are read, 16 KiB of each in blocks of 4 KiB at
// 0, 12 KiB, 24 KiB and 36 KiB (spread evenly, the first and last block included).
TEST_F(FingerprintTest, ALargeDatasetIsSampledFromItsSizesAloneAndTheRestIsNotRead) {
  const SamplePolicy small{.content_budget = 64 << 10, .max_sampled_files = 4, .block_bytes = 4 << 10};
  for (int i = 0; i < 10; ++i) write("a/f" + std::to_string(i) + ".bin", std::string(40 << 10, static_cast<char>(i)));
  copy_with_other_mtimes("a", "b");
  auto a = of_tree(dir_ / "a", small);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->hex, hex_of(dir_ / "b", small)) << "sampled the same way on both copies";
  EXPECT_NE(a->covers.find("4 files spread over the list, up to 16.0 KiB of each in blocks of 4.0 KiB"),
            std::string::npos)
      << a->covers;

  struct Change {
    std::string file;
    uint64_t offset;
    bool seen;
  };
  for (const Change& c : {Change{"f0.bin", 0, true}, Change{"f0.bin", 4095, true}, Change{"f9.bin", (40 << 10) - 1, true},
                          Change{"f3.bin", 12 << 10, true}, Change{"f6.bin", (24 << 10) + 100, true},
                          Change{"f0.bin", 8000, false},  // between two blocks of a sampled file
                          Change{"f1.bin", 0, false}}) {  // a file that is not sampled
    const std::string path = (dir_ / "b" / c.file).string();
    flip_byte(path, c.offset);
    EXPECT_EQ(hex_of(dir_ / "b", small) != a->hex, c.seen) << c.file << " offset " << c.offset;
    flip_byte(path, c.offset);
  }
  EXPECT_EQ(hex_of(dir_ / "b", small), a->hex);
  write("b/f1.bin", std::string((40 << 10) + 1, 1));  // the size of a file that is not sampled
  EXPECT_NE(hex_of(dir_ / "b", small), a->hex);
}

TEST(FingerprintNames, RelativeToTheCommonDirectory) {
  using V = std::vector<std::string>;
  EXPECT_EQ(FingerprintBuilder::relative_to_common_directory({"/d/x/1.tar", "/d/y/2.tar"}), (V{"x/1.tar", "y/2.tar"}));
  EXPECT_EQ(FingerprintBuilder::relative_to_common_directory({"/d/ab/1", "/d/ac/2"}), (V{"ab/1", "ac/2"}));
  EXPECT_EQ(FingerprintBuilder::relative_to_common_directory({"/srv/a/s-1.tar"}), (V{"s-1.tar"}));
  EXPECT_EQ(FingerprintBuilder::relative_to_common_directory({"a.tar", "b.tar"}), (V{"a.tar", "b.tar"}));
  EXPECT_EQ(FingerprintBuilder::relative_to_common_directory({"/a/1", "/b/2"}), (V{"a/1", "b/2"}));
}

TEST_F(FingerprintTest, MissingFilesAndCancellationAreErrors) {
  write("a/1.bin", "x");
  FingerprintBuilder missing("test");
  missing.add_file("1.bin", (dir_ / "a/1.bin").string());
  missing.add_file("2.bin", (dir_ / "a/2.bin").string());
  auto gone = missing.finish();
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(gone.error().message().find((dir_ / "a/2.bin").string()), std::string::npos) << gone.error().message();

  std::atomic<bool> cancel{true};
  FingerprintBuilder cancelled("test");
  cancelled.add_file("1.bin", (dir_ / "a/1.bin").string());
  auto stopped = cancelled.finish(&cancel);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code(), ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace batchd::daemon
