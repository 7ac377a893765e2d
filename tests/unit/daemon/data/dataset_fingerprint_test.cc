// Every format's Dataset::fingerprint (idx, imagefolder, tokens, webdataset) on real files: a copy of the data in
// another directory, with other mtimes (and for single-file formats another file name), has the same fingerprint; a
// byte, a file name or a parameter that decides the samples changes it. And the registry's life cycle of
// fingerprints: computed for every open, again at every reload (a file changed under an unchanged config is seen),
// a superseded result dropped, and on the DatasetLoader's thread, never on the event loop.
#include <gtest/gtest.h>
#include <zlib.h>

#include <boost/asio/io_context.hpp>
#include <thread>

#include "data/dataset.h"
#include "data/dataset_loader.h"
#include "fingerprint_test_support.h"
#include "tar_writers.h"

namespace batchd::daemon {
namespace {

using fingerprint_test::flip_byte;
using fingerprint_test::FingerprintTest;

DatasetConfig config(const std::string& name, const std::string& format) {
  DatasetConfig c;
  c.name = name;
  c.format = format;
  return c;
}

std::string fingerprint_of(const DatasetConfig& c) {
  auto ds = open_dataset(c, OpenContext{});
  EXPECT_TRUE(ds.ok()) << ds.error().message();
  if (!ds.ok()) return "";
  auto fp = (*ds)->fingerprint(nullptr);
  EXPECT_TRUE(fp.ok()) << fp.error().message();
  return fp.ok() ? fp->hex : "";
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

TEST_F(FingerprintTest, IdxCoversTheDecompressedContentWhateverTheFilesAreNamed) {
  std::string images = be32(0x803) + be32(3) + be32(2) + be32(2) + "abcdefghijkl";
  const std::string labels = be32(0x801) + be32(3) + std::string("\1\2\3");
  auto a = config("fm", "idx");
  a.images = write("a/train-images", images);
  a.labels = write("a/train-labels", labels);
  auto b = config("fm", "idx");  // the same data gzipped, under other names
  b.images = (dir_ / "b-images.gz").string();
  b.labels = write("b-labels", labels);
  gzFile f = gzopen(b.images.c_str(), "wb");
  gzwrite(f, images.data(), static_cast<unsigned>(images.size()));
  gzclose(f);
  EXPECT_EQ(fingerprint_of(a), fingerprint_of(b));
  images.back() = 'm';  // one pixel
  write("a/train-images", images);
  EXPECT_NE(fingerprint_of(a), fingerprint_of(b));
}

TEST_F(FingerprintTest, ImageFolderCoversRelativePathsSizesAndContent) {
  write("a/cat/1.jpg", "cat one");
  write("a/cat/sub/2.png", "cat two");
  write("a/dog/3.jpeg", "dog three");
  write("a/dog/notes.txt", "not a sample");
  copy_with_other_mtimes("a", "mnt/other/b");
  auto a = config("imgs", "imagefolder");
  a.root = (dir_ / "a").string();
  auto b = config("imgs", "imagefolder");
  b.root = (dir_ / "mnt/other/b").string() + "/";
  const std::string original = fingerprint_of(a);
  EXPECT_EQ(fingerprint_of(b), original);
  write("mnt/other/b/dog/notes.txt", "not a sample either: not part of the fingerprint");
  EXPECT_EQ(fingerprint_of(b), original);
  flip_byte((dir_ / "mnt/other/b/dog/3.jpeg").string(), 0);
  EXPECT_NE(fingerprint_of(b), original);
  flip_byte((dir_ / "mnt/other/b/dog/3.jpeg").string(), 0);
  std::filesystem::rename(dir_ / "mnt/other/b/cat/1.jpg", dir_ / "mnt/other/b/cat/0.jpg");
  EXPECT_NE(fingerprint_of(b), original) << "a file's name";
  std::filesystem::rename(dir_ / "mnt/other/b/cat/0.jpg", dir_ / "mnt/other/b/cat/1.jpg");
  std::filesystem::rename(dir_ / "mnt/other/b/dog", dir_ / "mnt/other/b/dogs");
  EXPECT_NE(fingerprint_of(b), original) << "a class's name (it decides the labels)";
}

TEST_F(FingerprintTest, TokensCoverDtypeSeqLenAndContentNotTheFileName) {
  std::string tokens;
  for (int k = 0; k < 1000; ++k) tokens += static_cast<char>(k * 7);
  auto a = config("lm", "tokens");
  a.path = write("a/train.bin", tokens);
  a.dtype = "uint16";
  a.seq_len = 16;
  write("elsewhere/owt-train-v1.bin", tokens);
  copy_with_other_mtimes("elsewhere", "b");
  auto b = a;
  b.path = (dir_ / "b/owt-train-v1.bin").string();
  EXPECT_EQ(fingerprint_of(a), fingerprint_of(b));
  auto other_t = b;
  other_t.seq_len = 32;
  EXPECT_NE(fingerprint_of(other_t), fingerprint_of(a));
  auto other_dtype = b;
  other_dtype.dtype = "uint32";
  EXPECT_NE(fingerprint_of(other_dtype), fingerprint_of(a));
  flip_byte(b.path, 777);
  EXPECT_NE(fingerprint_of(b), fingerprint_of(a));

  // A file renamed over the mapped one: the fingerprint would not describe the data served.
  auto opened = open_dataset(a, OpenContext{});
  ASSERT_TRUE(opened.ok());
  std::filesystem::rename(b.path, a.path);
  auto replaced = (*opened)->fingerprint(nullptr);
  ASSERT_FALSE(replaced.ok());
  EXPECT_EQ(replaced.error().code(), ErrorCode::kDataError);
  EXPECT_NE(replaced.error().message().find("was replaced"), std::string::npos) << replaced.error().message();
}

TEST_F(FingerprintTest, WebDatasetCoversShardNamesTheIndexAndContent) {
  std::filesystem::create_directories(dir_ / "a");
  for (int s = 0; s < 2; ++s) {
    testing::python_tar((dir_ / ("a/shard-" + std::to_string(s) + ".tar")).string(),
                        {{"k" + std::to_string(s) + ".jpg", testing::bytes_of(700, s)}, {"k" + std::to_string(s) + ".cls", "3"}});
  }
  copy_with_other_mtimes("a", "x/y/b");
  auto a = config("wds", "webdataset");
  a.shards = {(dir_ / "a/shard-{0..1}.tar").string()};
  auto b = a;
  b.shards = {(dir_ / "x/y/b/shard-{0..1}.tar").string()};
  const std::string original = fingerprint_of(a);
  EXPECT_EQ(fingerprint_of(b), original);
  auto fields = b;
  fields.image_field = "png";
  EXPECT_NE(fingerprint_of(fields), original) << "another image field makes other samples";
  const std::string shard = (dir_ / "x/y/b/shard-1.tar").string();
  const uint64_t image = testing::file_bytes(shard, 0, 1 << 20).find(testing::bytes_of(700, 1));
  ASSERT_NE(image, std::string::npos);
  flip_byte(shard, image + 100);  // inside k1.jpg's data
  EXPECT_NE(fingerprint_of(b), original);
  flip_byte(shard, image + 100);
  EXPECT_EQ(fingerprint_of(b), original);
  std::filesystem::rename(shard, dir_ / "x/y/b/shard-2.tar");
  b.shards = {(dir_ / "x/y/b/shard-0.tar").string(), (dir_ / "x/y/b/shard-2.tar").string()};
  EXPECT_NE(fingerprint_of(b), original) << "a shard's name";
}

TEST_F(FingerprintTest, TheRegistryComputesThemForEveryOpenAndAgainAtEveryReload) {
  write("a/cat/1.jpg", "cat one");
  auto c = config("imgs", "imagefolder");
  c.root = (dir_ / "a").string();
  DatasetRegistry registry = DatasetRegistry::open_all({c});
  const auto first = registry.describe().at("imgs");
  EXPECT_EQ(first.format, "imagefolder");
  EXPECT_EQ(first.samples, 1u);
  EXPECT_EQ(first.fingerprint_status, "ready");
  ASSERT_EQ(first.fingerprint.hex.size(), 32u);

  // An unchanged config keeps the data, but its fingerprint is computed again: the image is read per sample, and a
  // changed one is what the dataset serves now.
  auto summary = registry.reload({c}, {});
  EXPECT_TRUE(summary.added.empty() && summary.changed.empty());
  EXPECT_EQ(registry.describe().at("imgs").fingerprint_status, "computing");
  EXPECT_EQ(registry.describe().at("imgs").fingerprint.hex, "");
  auto jobs = registry.take_fingerprint_jobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(registry.take_fingerprint_jobs().empty()) << "handed out once";
  write("a/cat/1.jpg", "cat One");
  registry.reload({c}, {});  // a second reload supersedes the first job
  EXPECT_TRUE(jobs[0].progress->cancel);
  EXPECT_FALSE(registry.set_fingerprint(jobs[0], jobs[0].dataset->fingerprint(nullptr))) << "superseded";
  auto again = registry.take_fingerprint_jobs();
  ASSERT_EQ(again.size(), 1u);
  ASSERT_TRUE(registry.set_fingerprint(again[0], again[0].dataset->fingerprint(nullptr)));
  const auto second = registry.describe().at("imgs");
  EXPECT_EQ(second.fingerprint_status, "ready");
  EXPECT_NE(second.fingerprint.hex, first.fingerprint.hex);

  std::filesystem::remove(dir_ / "a/cat/1.jpg");  // a failure is reported, naming the file
  registry.reload({c}, {});
  auto failing = registry.take_fingerprint_jobs();
  ASSERT_EQ(failing.size(), 1u);
  registry.set_fingerprint(failing[0], failing[0].dataset->fingerprint(nullptr));
  const auto failed = registry.describe().at("imgs");
  EXPECT_EQ(failed.fingerprint.hex, "");
  EXPECT_EQ(failed.fingerprint_status.rfind("failed: ", 0), 0u) << failed.fingerprint_status;
  EXPECT_NE(failed.fingerprint_status.find("1.jpg"), std::string::npos) << failed.fingerprint_status;
}

// Records the thread its fingerprint is computed on.
class ThreadRecordingDataset final : public Dataset {
 public:
  const std::string& name() const override { return name_; }
  const char* format() const override { return "recording"; }
  uint64_t size() const override { return 1; }
  Result<Fingerprint> fingerprint(const std::atomic<bool>*) const override {
    *thread_ = std::this_thread::get_id();
    return Fingerprint{"00112233445566778899aabbccddeeff", "nothing"};
  }
  std::shared_ptr<std::thread::id> thread_ = std::make_shared<std::thread::id>();

 private:
  std::string name_ = "rec";
};

TEST(DatasetLoaderFingerprintTest, FingerprintsAreComputedOffTheEventLoop) {
  DatasetRegistry registry;
  auto c = config("rec", "webdataset");  // a background open: install() takes any dataset
  c.shards = {"/nonexistent/x-{0..1}.tar"};
  auto summary = registry.reload({c}, {});
  ASSERT_EQ(summary.jobs.size(), 1u);
  auto dataset = std::make_shared<ThreadRecordingDataset>();
  ASSERT_TRUE(registry.install(summary.jobs[0], std::shared_ptr<const Dataset>(dataset)));
  boost::asio::io_context io;
  DatasetLoader loader(io, registry, "", [](const std::string&) {});
  loader.fingerprint(registry.take_fingerprint_jobs());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (registry.describe().at("rec").fingerprint_status != "ready" && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(10));
    io.restart();
  }
  EXPECT_EQ(registry.describe().at("rec").fingerprint.hex, "00112233445566778899aabbccddeeff");
  EXPECT_NE(*dataset->thread_, std::thread::id()) << "computed";
  EXPECT_NE(*dataset->thread_, std::this_thread::get_id()) << "not on the event loop's thread";
  loader.stop();
}

}  // namespace
}  // namespace batchd::daemon
