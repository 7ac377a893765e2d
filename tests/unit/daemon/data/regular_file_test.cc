// Dataset files are read only if they are regular files: a FIFO (or a device) is refused at once, naming the path,
// and never blocks the reader; and only if they are the file scanned (not swapped for a link to another).
#include "data/regular_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "data/imagefolder_dataset.h"

namespace batchd::daemon {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("regular-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cls");
    std::ofstream(dir_ / "cls" / "a.jpg") << "not decoded by the scan";
    ASSERT_EQ(::mkfifo((dir_ / "cls" / "b.jpg").c_str(), 0644), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RegularFileTest, OpeningAFifoFailsAtOnceNamingIt) {
  const std::string fifo = (dir_ / "cls" / "b.jpg").string();
  const auto t0 = std::chrono::steady_clock::now();
  auto fd = open_regular_file(fifo);  // a plain open() would block here until a writer came
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), ErrorCode::kDataError);
  EXPECT_NE(fd.error().message().find(fifo + " is a FIFO, not a regular file"), std::string::npos)
      << fd.error().message();
  std::vector<uint8_t> bytes;
  auto st = read_file(fifo, &bytes);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kDataError) << "a data error of that one sample (on_error applies)";
  EXPECT_TRUE(open_regular_file((dir_ / "cls" / "a.jpg").string()).ok());
  auto missing = open_regular_file((dir_ / "nope").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST_F(RegularFileTest, TheImageFolderScanRefusesAFifoOrADeviceButLeavesADanglingLinkToTheReader) {
  auto ds = ImageFolderDataset::open("d", dir_.string());
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.error().code(), ErrorCode::kDataError);
  EXPECT_NE(ds.error().message().find((dir_ / "cls" / "b.jpg").string() + " is a FIFO"), std::string::npos)
      << ds.error().message();
  fs::remove(dir_ / "cls" / "b.jpg");
  fs::create_symlink("/dev/null", dir_ / "cls" / "c.jpg");
  ds = ImageFolderDataset::open("d", dir_.string());
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.error().message().find("c.jpg is a character device"), std::string::npos) << ds.error().message();
  fs::remove(dir_ / "cls" / "c.jpg");
  fs::create_symlink(dir_ / "nowhere.jpg", dir_ / "cls" / "d.jpg");
  ds = ImageFolderDataset::open("d", dir_.string());
  ASSERT_TRUE(ds.ok()) << "a dangling link fails when read, per sample: " << ds.error().message();
  EXPECT_EQ((*ds)->size(), 2u);
}

// Issue 23, finding 6: a sample file swapped after the scan for a symlink to another file (or for another file) is
// not read; one rewritten in place (the same file) is read as it is now.
TEST_F(RegularFileTest, AnImageSwappedForALinkToAnotherFileIsNotReadButOneRewrittenInPlaceIs) {
  fs::remove(dir_ / "cls" / "b.jpg");
  std::ofstream(dir_ / "secret") << "root-only";
  auto ds = ImageFolderDataset::open("d", dir_.string());
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  ASSERT_EQ((*ds)->size(), 1u);
  const std::string image = (dir_ / "cls" / "a.jpg").string();
  std::ofstream(image) << "rewritten in place";
  std::vector<uint8_t> bytes;
  int64_t label = -1;
  ASSERT_TRUE((*ds)->read_image(0, &bytes, &label).ok());
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "rewritten in place");
  fs::create_symlink(dir_ / "secret", image + ".new");
  fs::rename(image + ".new", image);
  bytes.clear();
  auto st = (*ds)->read_image(0, &bytes, &label);
  ASSERT_FALSE(st.ok()) << "read " << std::string(bytes.begin(), bytes.end());
  EXPECT_EQ(st.error().code(), ErrorCode::kDataError);
  EXPECT_NE(st.error().message().find(image + " changed since it was indexed (it is now another file"),
            std::string::npos)
      << st.error().message();
  EXPECT_TRUE(bytes.empty());
}

TEST_F(RegularFileTest, AnIdxFileThatIsAFifoIsRefusedWithoutBlocking) {
  const std::string fifo = (dir_ / "cls" / "b.jpg").string();
  DatasetConfig c;
  c.name = "idx-fifo";
  c.format = "idx";
  c.images = c.labels = fifo;
  const auto t0 = std::chrono::steady_clock::now();
  auto registry = DatasetRegistry::open_all({c});  // at start-up and on SIGHUP: on the event loop
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  auto ds = registry.find("idx-fifo");
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.error().message().find(fifo + " is a FIFO"), std::string::npos) << ds.error().message();
}

}  // namespace
}  // namespace batchd::daemon
