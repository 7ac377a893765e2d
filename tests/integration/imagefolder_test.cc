// ImageFolder datasets through a real daemon: torchvision's order and labels, val224 values against torchvision,
// determinism across worker counts, and every kind of bad file.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

const std::string kData = BATCHD_TESTDATA_DIR;

std::string config_path() {
  return ::testing::TempDir() + "batchd-imagefolder-" + std::to_string(::getpid()) + ".toml";
}

std::string write_config() {
  const std::string path = config_path();
  std::ofstream(path) << "[datasets.photos]\nformat = \"imagefolder\"\nroot = \"" << kData << "/imagefolder\"\n"
                      << "[datasets.photos-bad]\nformat = \"imagefolder\"\nroot = \"" << kData << "/imagefolder-bad\"\n"
                      << "[datasets.empty-class]\nformat = \"imagefolder\"\nroot = \"" << kData
                      << "/imagefolder-empty-class\"\n"
                      << "[datasets.missing]\nformat = \"imagefolder\"\nroot = \"" << kData << "/no-such-root\"\n";
  return path;
}

StreamOptions photos(const std::string& pipeline, uint32_t batch = 8, const std::string& dataset = "photos") {
  StreamOptions o;
  o.dataset = dataset;
  o.pipeline = pipeline;
  o.batch_size = batch;
  o.shuffle = false;
  return o;
}

class ImageFolderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = new tools::SpawnedDaemon(start_daemon("", 2, {"--config", write_config()}));
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
    std::remove(config_path().c_str());
  }
  Client client() { return std::move(Client::connect(daemon_->socket_path())).value(); }
  static tools::SpawnedDaemon* daemon_;
};
tools::SpawnedDaemon* ImageFolderTest::daemon_ = nullptr;

TEST_F(ImageFolderTest, Val224MatchesTorchvisionWithinTolerance) {
  const int n = 24;
  const std::string out = ::testing::TempDir() + "tv-ref-" + std::to_string(::getpid());
  struct Cleanup {
    std::string out;
    ~Cleanup() {
      for (const char* ext : {".f32", ".labels", ".paths"}) std::remove((out + ext).c_str());
    }
  } cleanup{out};
  std::string why;
  if (!torchvision_reference(kData + "/imagefolder " + std::to_string(n) + " " + out, &why)) FAIL() << "the torchvision reference failed: " << why;
  std::vector<float> expected(static_cast<size_t>(n) * 3 * 224 * 224);
  std::ifstream(out + ".f32", std::ios::binary).read(reinterpret_cast<char*>(expected.data()),
                                                      static_cast<std::streamsize>(expected.size() * 4));
  std::vector<int64_t> labels;
  std::ifstream lf(out + ".labels");
  for (int64_t l; lf >> l;) labels.push_back(l);

  for (bool exact : {true, false}) {
    auto c = client();
    auto o = photos("val224", n);
    o.vision.exact_decode = exact;
    auto stream = c.open_stream(o);
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    EXPECT_EQ(stream->info().dataset_size, labels.size()) << "same number of samples as torchvision's ImageFolder";
    auto batch = stream->next();
    ASSERT_TRUE(batch.ok() && *batch) << (batch.ok() ? "end" : batch.error().message());
    const Tensor* image = (*batch)->find("image");
    EXPECT_EQ(image->shape, (std::vector<int64_t>{n, 3, 224, 224}));
    const Tensor* label = (*batch)->find("label");
    for (int i = 0; i < n; ++i) EXPECT_EQ(label->data_as<int64_t>()[i], labels[i]) << "sample " << i;
    double max_diff = 0, sum_diff = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      const double d = std::fabs(image->data_as<float>()[i] - expected[i]);
      max_diff = std::max(max_diff, d);
      sum_diff += d;
    }
    const double mean_diff = sum_diff / expected.size();
    // One 8-bit level is 1/255/0.225 = 0.0174 after Normalize. Full-size decode uses the same libjpeg-turbo IDCT
    // as PIL and Pillow's own resampling, so values agree to a level (measured: bit-identical); DCT-scaled decode
    // (JPEGs whose shorter side is >= 512) trades exactness for speed: measured mean 0.021 (1.2 levels), max 1.32.
    if (exact) {
      EXPECT_LE(max_diff, 0.0175 * 1.01) << "mean " << mean_diff;
      EXPECT_LE(mean_diff, 0.002);
    } else {
      EXPECT_LE(mean_diff, 0.03) << "max " << max_diff;
    }
    std::printf("val224 vs torchvision (exact_decode=%d): max |diff| %.5f, mean |diff| %.6f over %d images\n", exact,
                max_diff, mean_diff, n);
  }
}

TEST_F(ImageFolderTest, TrainBatchesAreIdenticalWhicheverWorkersMakeThem) {
  auto one_worker = start_daemon("", 1, {"--config", write_config()});
  // Three workers, depth 1, no lower bound on chunks: each batch of 7 is made in 3 chunks by different workers.
  auto chunked = start_daemon("", 3, {"--config", write_config(), "--min-chunk-us", "0"});
  // Reads the epoch; *chunks (if given): the chunks the workers made for it, read before the stream closes.
  auto read_epoch = [](const std::string& socket, uint32_t depth = 0, uint64_t* chunks = nullptr) {
    auto c = std::move(Client::connect(socket)).value();
    auto o = photos("train224_u8", 7);
    o.shuffle = true;
    o.seed = 42;
    o.epoch = 3;
    o.depth = depth;
    auto stream = std::move(c.open_stream(o)).value();
    std::vector<std::vector<uint8_t>> images;
    for (;;) {
      auto batch = stream.next();
      EXPECT_TRUE(batch.ok());
      if (!batch.ok() || !*batch) break;
      const Tensor* image = (*batch)->find("image");
      images.emplace_back(image->data_as<uint8_t>(), image->data_as<uint8_t>() + image->nbytes);
    }
    if (chunks != nullptr) {
      for (uint64_t n : daemon_status(socket).streams.at(0).chunks_by_worker) *chunks += n;
    }
    return images;
  };
  const auto a = read_epoch(daemon_->socket_path());
  const auto b = read_epoch(one_worker.socket_path());
  uint64_t chunks = 0;
  const auto c = read_epoch(chunked.socket_path(), 1, &chunks);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), c.size());
  ASSERT_GT(a.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i] == b[i]) << "batch " << i << " differs";
    EXPECT_TRUE(a[i] == c[i]) << "batch " << i << " differs when made in chunks";
  }
  EXPECT_GT(chunks, 2 * a.size()) << "the batches were made in 3 chunks each (the last one may be shorter)";
}

TEST_F(ImageFolderTest, TrainCropsDifferAcrossEpochsAndShapesFollowCropSize) {
  auto c = client();
  auto o = photos("train224", 4);
  o.vision.crop_size = 96;
  o.num_epochs = 2;
  auto stream = c.open_stream(o);
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  std::map<uint64_t, std::vector<float>> first_batch;  // epoch -> image data of batch 0
  for (;;) {
    auto batch = stream->next();
    ASSERT_TRUE(batch.ok());
    if (!*batch) break;
    const Tensor* image = (*batch)->find("image");
    ASSERT_EQ(image->shape, (std::vector<int64_t>{static_cast<int64_t>((*batch)->size()), 3, 96, 96}));
    if ((*batch)->index() == 0) {
      first_batch[(*batch)->epoch()].assign(image->data_as<float>(), image->data_as<float>() + image->numel());
    }
  }
  ASSERT_EQ(first_batch.size(), 2u);
  EXPECT_NE(first_batch[0], first_batch[1]) << "the same samples get new random crops in a new epoch";
}

TEST_F(ImageFolderTest, BadFilesFailTheStreamNamingTheFileAndReason) {
  std::set<std::string> reasons;
  // Each bad file in turn: skip every batch before it by starting there (unshuffled, batch of 1).
  auto c = client();
  auto probe = c.open_stream(photos("val224", 1, "photos-bad"));
  ASSERT_TRUE(probe.ok());
  const uint64_t n = probe->info().dataset_size;
  ASSERT_EQ(n, 61u + 5u);
  for (uint64_t start = 0; start < n; ++start) {
    auto o = photos("val224", 1, "photos-bad");
    o.start_batch = start;
    o.num_epochs = 1;
    auto s = c.open_stream(o);
    ASSERT_TRUE(s.ok());
    auto batch = s->next();
    if (batch.ok() && *batch && start >= 4 && start <= 8) {
      ADD_FAILURE() << "sample " << start << " decoded: index " << (*batch)->find("index")->data_as<int64_t>()[0];
    }
    if (batch.ok()) continue;
    EXPECT_EQ(batch.error().code(), ErrorCode::kDataError) << batch.error().message();
    const std::string& m = batch.error().message();
    EXPECT_NE(m.find("/bad_"), std::string::npos) << "the error names the file: " << m;
    EXPECT_NE(m.find("on_error=skip"), std::string::npos) << m;
    for (const char* r : {"is empty (0 bytes)", "truncated JPEG", "not a JPEG or PNG image", "No such file",
                          "truncated PNG"}) {
      if (m.find(r) != std::string::npos) reasons.insert(r);
    }
  }
  std::string seen;
  for (const auto& r : reasons) seen += "[" + r + "] ";
  EXPECT_EQ(reasons.size(), 5u) << "each bad file reports its own reason; seen: " << seen;
}

TEST_F(ImageFolderTest, SkipReplacesBadFilesCountsThemAndNeverDeliversThem) {
  auto c = client();
  auto o = photos("val224", 16, "photos-bad");
  o.on_error = OnError::kSkip;
  o.vision.crop_size = 64;
  o.vision.resize_size = 64;
  auto stream = c.open_stream(o);
  ASSERT_TRUE(stream.ok());
  size_t skipped = 0, samples = 0;
  for (;;) {
    auto batch = stream->next();
    ASSERT_TRUE(batch.ok()) << batch.error().message();
    if (!*batch) break;
    skipped += (*batch)->skipped();
    samples += (*batch)->size();
  }
  EXPECT_EQ(skipped, 5u);
  EXPECT_EQ(samples, 66u) << "every position is filled, bad samples by their replacements";
  // Other streams and the daemon are unaffected.
  auto s = client().open_stream(photos("train224", 8));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->next().ok());
}

TEST_F(ImageFolderTest, UnusableRootsAreRefusedAtOpenStream) {
  auto c = client();
  auto missing = c.open_stream(photos("val224", 4, "missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(missing.error().message().find("no-such-root does not exist"), std::string::npos)
      << missing.error().message();
  auto empty = c.open_stream(photos("val224", 4, "empty-class"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message().find("holds no .jpg/.jpeg/.png image"), std::string::npos)
      << empty.error().message();
  auto wrong = c.open_stream(photos("fmnist", 4));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("needs an idx dataset"), std::string::npos);
}

}  // namespace
}  // namespace batchd::testing
