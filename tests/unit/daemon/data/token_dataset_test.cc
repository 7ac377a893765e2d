// TokenDataset (format "tokens") on real files: window count and contents for uint16 and uint32, the shared
// read-only mapping, every bad input refused at open with the file, the key and the fix named, and a file truncated
// after it was opened.
#include "data/token_dataset.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "token_test_support.h"

namespace batchd::daemon {
namespace {

using token_test::tokens_config;

class TokenDatasetTest : public token_test::ScratchTest {
 protected:
  static std::string error_of(const DatasetConfig& c, ErrorCode code) {
    auto sut = TokenDataset::open(c);
    EXPECT_FALSE(sut.ok());
    if (sut.ok()) return "";
    EXPECT_EQ(sut.error().code(), code) << sut.error().message();
    return sut.error().message();
  }
};

uint64_t counting(uint64_t k) { return k; }

TEST_F(TokenDatasetTest, Uint16WindowsAreTokensITimesTOfLengthTPlusOne) {
  // N = 10, T = 3: floor(9 / 3) = 3 windows [0,4) [3,7) [6,10); token 9 is the last target.
  const std::string path = write_tokens<uint16_t>("train.bin", 10, [](uint64_t k) { return 100 + k; });
  auto sut = TokenDataset::open(tokens_config(path, "uint16", 3));
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  const TokenDataset& ds = **sut;
  EXPECT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds.token_count(), 10u);
  EXPECT_STREQ(ds.format(), "tokens");
  ASSERT_EQ(ds.tokens(), &ds);
  EXPECT_EQ(ds.images(), nullptr);
  EXPECT_EQ(ds.dtype(), TokenWindows::Dtype::kUint16);
  EXPECT_EQ(ds.seq_len(), 3u);
  for (uint64_t i = 0; i < ds.size(); ++i) {
    const auto* w = static_cast<const uint16_t*>(ds.token(i * 3));
    for (uint64_t k = 0; k <= 3; ++k) EXPECT_EQ(w[k], 100 + i * 3 + k) << "window " << i << " token " << k;
  }
  EXPECT_EQ(*static_cast<const uint16_t*>(ds.token(9)), 109u) << "any offset, the last token included";
  EXPECT_EQ(ds.tokens_present(), 10u);
  EXPECT_EQ(ds.window_name(6, 4), path + ": tokens [6, 10)");
  // One token fewer: the last window would need token 9.
  const std::string nine = write_tokens<uint16_t>("nine.bin", 9, counting);
  EXPECT_EQ(TokenDataset::open(tokens_config(nine, "uint16", 3)).value()->size(), 2u);
  // The smallest file: T + 1 tokens, one window.
  const std::string four = write_tokens<uint16_t>("four.bin", 4, counting);
  EXPECT_EQ(TokenDataset::open(tokens_config(four, "uint16", 3)).value()->size(), 1u);
}

TEST_F(TokenDatasetTest, Uint32TokensKeepTheirHighBits) {
  // N = 11, T = 5: floor(10 / 5) = 2 windows; values above 65535 (a vocabulary larger than uint16's).
  const std::string path = write_tokens<uint32_t>("train.bin", 11, [](uint64_t k) { return 70000 + k * 65536; });
  auto sut = TokenDataset::open(tokens_config(path, "uint32", 5));
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ((*sut)->size(), 2u);
  EXPECT_EQ((*sut)->dtype(), TokenWindows::Dtype::kUint32);
  const auto* w = static_cast<const uint32_t*>((*sut)->token(5));
  for (uint64_t k = 0; k <= 5; ++k) EXPECT_EQ(w[k], 70000 + (5 + k) * 65536);
}

TEST_F(TokenDatasetTest, TheFileIsMappedReadOnlyAndSharedSoThePageCacheIsTheOnlyCopy) {
  const std::string path = write_tokens<uint16_t>("shared.bin", 4096, counting);
  auto sut = TokenDataset::open(tokens_config(path, "uint16", 64));
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  std::ifstream maps("/proc/self/maps");
  std::string line, perms;
  while (std::getline(maps, line)) {
    if (line.size() > path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0) {
      perms = line.substr(line.find(' ') + 1, 4);
    }
  }
  EXPECT_EQ(perms, "r--s") << "a private (p) or writable mapping would let a process hold its own copy";
}

TEST_F(TokenDatasetTest, AMissingFileNamesThePathTheKeyAndTheFix) {
  const std::string msg = error_of(tokens_config((dir_ / "nope.bin").string(), "uint16", 8), ErrorCode::kNotFound);
  EXPECT_NE(msg.find((dir_ / "nope.bin").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("datasets.lm.path"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fix the path"), std::string::npos) << msg;
}

TEST_F(TokenDatasetTest, SomethingOtherThanARegularFileIsRefusedWithoutBlocking) {
  const std::string msg = error_of(tokens_config(dir_.string(), "uint16", 8), ErrorCode::kDataError);
  EXPECT_NE(msg.find("is a directory, not a regular file"), std::string::npos) << msg;
  const std::string fifo = (dir_ / "fifo.bin").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string fmsg = error_of(tokens_config(fifo, "uint16", 8), ErrorCode::kDataError);  // would hang on a read
  EXPECT_NE(fmsg.find(fifo + " is a FIFO"), std::string::npos) << fmsg;
}

TEST_F(TokenDatasetTest, ASizeThatIsNotAMultipleOfTheDtypeNamesTheSizeAndTheDtype) {
  const std::string odd = write_bytes("odd.bin", std::string(7, 'x'));
  const std::string msg = error_of(tokens_config(odd, "uint16", 2), ErrorCode::kDataError);
  EXPECT_NE(msg.find(odd + " holds 7 bytes, not a whole number of uint16 tokens (2 bytes each)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("datasets.lm.dtype"), std::string::npos) << msg;
  const std::string six = write_bytes("six.bin", std::string(6, 'x'));  // 3 uint16, but not whole uint32s
  const std::string msg32 = error_of(tokens_config(six, "uint32", 1), ErrorCode::kDataError);
  EXPECT_NE(msg32.find("holds 6 bytes, not a whole number of uint32 tokens (4 bytes each)"), std::string::npos)
      << msg32;
}

TEST_F(TokenDatasetTest, SeqLenNotSmallerThanTheTokenCountNamesBoth) {
  const std::string path = write_tokens<uint16_t>("short.bin", 8, counting);
  for (uint32_t t : {8u, 9u, 1024u}) {
    const std::string msg = error_of(tokens_config(path, "uint16", t), ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("datasets.lm.seq_len = " + std::to_string(t) + " is not smaller than the 8 tokens in " + path),
              std::string::npos)
        << msg;
  }
  EXPECT_TRUE(TokenDataset::open(tokens_config(path, "uint16", 7)).ok());
}

TEST_F(TokenDatasetTest, AnEmptyFileIsRefused) {
  const std::string path = write_bytes("empty.bin", "");
  const std::string msg = error_of(tokens_config(path, "uint16", 1), ErrorCode::kDataError);
  EXPECT_NE(msg.find(path + " is empty (0 bytes)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("datasets.lm.path"), std::string::npos) << msg;
}

TEST_F(TokenDatasetTest, AFileTruncatedAfterOpenReportsTheTokensThatAreGone) {
  const std::string path = write_tokens<uint16_t>("cut.bin", 101, counting);  // T = 10: 10 windows
  auto sut = TokenDataset::open(tokens_config(path, "uint16", 10));
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  ASSERT_EQ((*sut)->tokens_present(), 101u);
  ASSERT_EQ(::truncate(path.c_str(), 2 * 45), 0);  // 45 tokens remain
  EXPECT_EQ((*sut)->tokens_present(), 45u);
  EXPECT_EQ((*sut)->size(), 10u) << "the windows as opened: the stream's reader checks tokens_present() per batch";
  const Error e = (*sut)->window_missing(70, 11);
  EXPECT_EQ(e.code(), ErrorCode::kDataError);
  EXPECT_NE(e.message().find(path + ": tokens [70, 81) is no longer in the file: it was truncated to 90 bytes"),
            std::string::npos)
      << e.message();
}

TEST_F(TokenDatasetTest, ChangedOnDiskSeesAResizedOrReplacedFile) {
  const std::string path = write_tokens<uint16_t>("grow.bin", 101, counting);
  auto sut = TokenDataset::open(tokens_config(path, "uint16", 10));
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ((*sut)->changed_on_disk(), "");
  std::ofstream(path, std::ios::app | std::ios::binary) << std::string(20, '\0');
  EXPECT_EQ((*sut)->changed_on_disk(), path + " is now 222 bytes (202 when it was opened)");

  const std::string other = write_tokens<uint16_t>("other.bin", 101, counting);
  auto replaced = TokenDataset::open(tokens_config(other, "uint16", 10));
  ASSERT_TRUE(replaced.ok());
  const std::string next = write_tokens<uint16_t>("next.bin", 101, counting);
  ASSERT_EQ(::rename(next.c_str(), other.c_str()), 0);  // same size, another file
  EXPECT_EQ((*replaced)->changed_on_disk(), other + " was replaced or removed since it was opened");
}

TEST_F(TokenDatasetTest, OpenDatasetOpensTokensAtOnceAndOtherFormatsHaveNoWindows) {
  const DatasetConfig c = tokens_config(write_tokens<uint16_t>("t.bin", 33, counting), "uint16", 8);
  EXPECT_FALSE(opens_in_background(c));
  auto ds = open_dataset(c, OpenContext{});
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  ASSERT_NE((*ds)->tokens(), nullptr);
  EXPECT_EQ((*ds)->size(), 4u);
  auto refused = open_dataset(tokens_config((dir_ / "gone.bin").string(), "uint16", 8), OpenContext{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace batchd::daemon
