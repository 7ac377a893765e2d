#include "data/idx_dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace batchd::daemon {
namespace {

class IdxDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("batchd-idx-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string be32(uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  }
  // count images of rows x cols whose pixel p of image i is (i * 7 + p) % 256.
  static std::string images(uint32_t count, uint32_t rows, uint32_t cols) {
    std::string s = be32(0x803) + be32(count) + be32(rows) + be32(cols);
    for (uint32_t i = 0; i < count; ++i)
      for (uint32_t p = 0; p < rows * cols; ++p) s += static_cast<char>((i * 7 + p) % 256);
    return s;
  }
  static std::string labels(uint32_t count) {
    std::string s = be32(0x801) + be32(count);
    for (uint32_t i = 0; i < count; ++i) s += static_cast<char>(i % 10);
    return s;
  }
  std::string write(const std::string& name, const std::string& bytes, bool gzip) {
    const std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary) << bytes;
    }
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(IdxDatasetTest, ReadsRawAndGzipFiles) {
  for (bool gz : {false, true}) {
    auto sut = IdxDataset::open("t", write("img", images(5, 3, 4), gz), write("lbl", labels(5), gz));
    ASSERT_TRUE(sut.ok()) << sut.error().message();
    EXPECT_EQ((*sut)->size(), 5u);
    EXPECT_EQ((*sut)->rows(), 3u);
    EXPECT_EQ((*sut)->cols(), 4u);
    EXPECT_EQ((*sut)->image(2)[5], (2 * 7 + 5) % 256);
    EXPECT_EQ((*sut)->label(4), 4);
  }
}

TEST_F(IdxDatasetTest, RejectsWrongMagicTruncationAndMismatchedCounts) {
  const auto lbl = write("lbl", labels(5), false);
  auto swapped = IdxDataset::open("t", lbl, lbl);
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.error().message().find("0x00000803"), std::string::npos);

  std::string img = images(5, 3, 4);
  img.resize(img.size() - 1);
  auto truncated = IdxDataset::open("t", write("img", img, true), lbl);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message().find("holds 59 pixel bytes"), std::string::npos)
      << truncated.error().message();

  auto mismatch = IdxDataset::open("t", write("img2", images(4, 3, 4), false), lbl);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message().find("4 images"), std::string::npos);
}

TEST_F(IdxDatasetTest, CorruptGzipIsADataErrorNamingTheFile) {
  std::string gz;
  {
    const auto path = write("good.gz", images(50, 28, 28), true);
    std::ifstream in(path, std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  gz.resize(gz.size() / 2);  // cut mid-stream
  const auto path = write("cut.gz", "", false);
  std::ofstream(path, std::ios::binary) << gz;
  auto sut = IdxDataset::open("t", path, write("lbl", labels(50), false));
  ASSERT_FALSE(sut.ok());
  EXPECT_NE(sut.error().message().find(path), std::string::npos) << sut.error().message();
}

TEST_F(IdxDatasetTest, MissingFileIsNotFound) {
  auto sut = IdxDataset::open("t", (dir_ / "nope").string(), (dir_ / "nope2").string());
  ASSERT_FALSE(sut.ok());
  EXPECT_EQ(sut.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(sut.error().message().find("nope"), std::string::npos);
}

TEST_F(IdxDatasetTest, RegistryReportsUndeclaredAndUnavailableDatasets) {
  auto idx = [](std::string name, std::string images, std::string labels) {
    DatasetConfig c;
    c.name = std::move(name);
    c.format = "idx";
    c.images = std::move(images);
    c.labels = std::move(labels);
    return c;
  };
  std::vector<DatasetConfig> configs = {
      idx("good", write("img", images(5, 3, 4), false), write("lbl", labels(5), false)),
      idx("broken", (dir_ / "missing").string(), (dir_ / "missing").string())};
  const auto sut = DatasetRegistry::open_all(configs);
  EXPECT_TRUE(sut.find("good").ok());
  auto broken = sut.find("broken");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(broken.error().message().find("missing"), std::string::npos);
  auto undeclared = sut.find("imagenet");
  ASSERT_FALSE(undeclared.ok());
  EXPECT_EQ(undeclared.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(undeclared.error().message().find("declared: broken, good"), std::string::npos)
      << undeclared.error().message();
}

}  // namespace
}  // namespace batchd::daemon
