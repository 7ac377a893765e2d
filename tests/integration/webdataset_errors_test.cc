// WebDataset shards through a real daemon, what goes wrong: the index cache reused on restart and rebuilt for a
// changed shard; a truncated or missing shard makes only its dataset unavailable, naming the file (and offset);
// samples without a label under on_error fail/skip; OpenStream while indexing says "indexing (k of n shards)".
#include <regex>

#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

namespace fs = std::filesystem;

TEST(WebDatasetErrorsTest, TheIndexCacheIsReusedOnRestartAndRebuiltForAChangedShard) {
  TempDir dir("wds-cache");
  fs::create_directories(dir.path + "/shards");
  for (const auto& e : fs::directory_iterator(kData + "/shards")) {
    fs::copy_file(e.path(), dir.path + "/shards/" + e.path().filename().string());
  }
  const std::string glob = dir.path + "/shards/shard-*.tar";
  const std::string config = dir.path + "/batchd.toml";
  std::ofstream(config) << wds_table("wds", toml_string(glob));
  const std::vector<std::string> args = {"--config", config, "--cache-dir", dir.path + "/cache"};
  {
    auto daemon = start_daemon("", 1, args);
    EXPECT_EQ(wait_indexed(daemon.socket_path(), "wds"),
              "wds (60 samples in 4 shards (0 from the index cache, 4 indexed))");
  }
  {
    auto daemon = start_daemon("", 1, args);
    EXPECT_EQ(wait_indexed(daemon.socket_path(), "wds"),
              "wds (60 samples in 4 shards (4 from the index cache, 0 indexed))");
  }
  // The last shard rewritten with its first 6 samples only.
  const std::string last = dir.path + "/shards/shard-000003.tar";
  ASSERT_EQ(std::system((BATCHD_PYTHON " -c 'import sys, tarfile\n"
                         "src = tarfile.open(sys.argv[1]); ms = src.getmembers()[:12]\n"
                         "with tarfile.open(sys.argv[1] + \".new\", \"w\", format=tarfile.USTAR_FORMAT) as t:\n"
                         "    [t.addfile(m, src.extractfile(m)) for m in ms]' " + last + " && mv " + last + ".new " + last)
                            .c_str()),
            0);
  Reference ref;
  std::string why;
  if (!tar_reference(glob, 0, &ref, &why)) FAIL() << "the torchvision reference failed: " << why;
  ASSERT_EQ(ref.labels.size(), 54u);
  auto daemon = start_daemon("", 1, args);
  EXPECT_EQ(wait_indexed(daemon.socket_path(), "wds"),
            "wds (54 samples in 4 shards (3 from the index cache, 1 indexed))");
  auto client = std::move(Client::connect(daemon.socket_path())).value();
  StreamOptions o;
  o.dataset = "wds";
  o.pipeline = "train224_u8";
  o.batch_size = 54;
  o.shuffle = false;
  o.vision.crop_size = 16;
  auto stream = client.open_stream(o);
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  auto batch = stream->next();
  ASSERT_TRUE(batch.ok() && *batch);
  const Tensor* label = (*batch)->find("label");
  for (size_t i = 0; i < 54; ++i) EXPECT_EQ(label->data_as<int64_t>()[i], ref.labels[i]) << ref.names[i];
}

class WebDatasetBadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string bad = kData + "/shards-bad/";
    suite_ = std::make_unique<SuiteDaemon>(
        "wds-bad",
        wds_table("wds", toml_string(kShards)) +
            wds_table("truncated", "[\"" + kData + "/shards/shard-000001.tar\", \"" + bad + "truncated.tar\"]") +
            wds_table("missing", toml_string(kData + "/shards/shard-{000000..000004}.tar")) +
            wds_table("partial", toml_string(bad + "partial.tar")),
        std::vector<std::string>{"--cache-dir", ""},
        std::vector<std::string>{"wds", "truncated", "missing", "partial"});
  }
  static void TearDownTestSuite() { suite_.reset(); }
  Client client() { return suite_->client(); }
  static const std::string& socket() { return suite_->daemon.socket_path(); }
  static StreamOptions options(const std::string& dataset, uint32_t batch) {
    StreamOptions o;
    o.dataset = dataset;
    o.pipeline = "val224";
    o.batch_size = batch;
    o.shuffle = false;
    o.vision.crop_size = o.vision.resize_size = 32;
    return o;
  }
  static inline std::unique_ptr<SuiteDaemon> suite_;
};

TEST_F(WebDatasetBadInputTest, ATruncatedOrMissingShardMakesOnlyItsDatasetUnavailableNamingTheFile) {
  auto c = client();
  auto truncated = c.open_stream(options("truncated", 4));
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.error().code(), ErrorCode::kUnavailable);
  const std::string& t = truncated.error().message();
  EXPECT_NE(t.find(kData + "/shards-bad/truncated.tar is truncated: member '"), std::string::npos) << t;
  const std::string size = std::to_string(fs::file_size(kData + "/shards-bad/truncated.tar"));
  EXPECT_TRUE(std::regex_search(t, std::regex("bytes of data from offset [0-9]+, but the file ends at " + size))) << t;
  EXPECT_NE(t.find("(shard 2 of 2 in datasets.truncated.shards)"), std::string::npos) << t;
  EXPECT_NE(dataset_line(socket(), "truncated").find("(unavailable: "), std::string::npos);

  auto missing = c.open_stream(options("missing", 4));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("shard " + kData + "/shards/shard-000004.tar does not exist "
                                           "(datasets.missing.shards"),
            std::string::npos)
      << missing.error().message();

  auto good = c.open_stream(options("wds", 8));
  ASSERT_TRUE(good.ok()) << good.error().message();
  auto batch = good->next();
  EXPECT_TRUE(batch.ok() && *batch) << "the other datasets serve";
}

TEST_F(WebDatasetBadInputTest, ASampleWithoutLabelFailsTheStreamOrIsSkipped) {
  EXPECT_EQ(dataset_line(socket(), "partial"),
            "partial (4 samples in 1 shard (indexed; no cache_dir); 0 without an image (.jpg, .jpeg, .png) and 1 "
            "without a label (.cls): they fail when read (on_error applies))");
  auto c = client();
  const std::string shard = kData + "/shards-bad/partial.tar";
  for (auto [start, text] : {std::pair<uint64_t, std::string>{1, shard + ": sample 'p1' (its first member's header "
                                                                         "is at offset "},
                             std::pair<uint64_t, std::string>{3, shard + ": sample 'p3' has a .cls member "}}) {
    auto o = options("partial", 1);
    o.start_batch = start;
    auto stream = c.open_stream(o);
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    auto batch = stream->next();
    ASSERT_FALSE(batch.ok()) << "sample " << start << " was delivered";
    EXPECT_EQ(batch.error().code(), ErrorCode::kDataError);
    EXPECT_NE(batch.error().message().find(text), std::string::npos) << batch.error().message();
  }
  auto o = options("partial", 4);
  o.on_error = OnError::kSkip;
  auto stream = c.open_stream(o);
  ASSERT_TRUE(stream.ok());
  auto batch = stream->next();
  ASSERT_TRUE(batch.ok() && *batch) << (batch.ok() ? "end" : batch.error().message());
  EXPECT_EQ((*batch)->size(), 4u);
  EXPECT_EQ((*batch)->skipped(), 2u);
  const Tensor* index = (*batch)->find("index");
  for (int64_t j = 0; j < 4; ++j) {
    const int64_t i = index->data_as<int64_t>()[j];
    EXPECT_TRUE(i == 0 || i == 2) << "only the good samples are delivered, not " << i;
  }
}

TEST(WebDatasetIndexingTest, OpenStreamWhileIndexingSaysHowFarItIs) {
  // 400 shards (symlinks to the 4 test shards: distinct paths), no cache: indexing takes a moment.
  TempDir dir("wds-many");
  std::string list;
  for (int copy = 0; copy < 100; ++copy) {
    for (int s = 0; s < 4; ++s) {
      const std::string link = dir.path + "/c" + std::to_string(copy) + "-" + std::to_string(s) + ".tar";
      fs::create_symlink(kData + "/shards/shard-00000" + std::to_string(s) + ".tar", link);
    }
  }
  std::ofstream(dir.path + "/batchd.toml") << wds_table("many", toml_string(dir.path + "/c*.tar"));
  auto daemon = start_daemon("", 1, {"--config", dir.path + "/batchd.toml", "--cache-dir", ""});
  auto client = std::move(Client::connect(daemon.socket_path())).value();
  const std::regex indexing(R"(dataset 'many' is indexing \((listing its shards|[0-9]+ of 400 shards)\); it can be )"
                            R"(opened once that is done)");
  StreamOptions o;
  o.dataset = "many";
  o.pipeline = "train224_u8";
  o.batch_size = 64;
  o.vision.crop_size = 16;
  int refused = 0;
  Result<Stream> stream = Error(ErrorCode::kUnavailable, "not tried");
  ASSERT_TRUE(eventually(
      [&] {
        stream = client.open_stream(o);
        if (!stream.ok()) {
          ++refused;
          EXPECT_EQ(stream.error().code(), ErrorCode::kUnavailable);
          EXPECT_TRUE(std::regex_search(stream.error().message(), indexing)) << stream.error().message();
        }
        return stream.ok();
      },
      std::chrono::seconds(120)));
  std::printf("OpenStream was refused %d time(s) while the 400 shards were indexed\n", refused);
  EXPECT_EQ(stream->info().dataset_size, 6000u);
  EXPECT_EQ(dataset_line(daemon.socket_path(), "many"), "many (6000 samples in 400 shards (indexed; no cache_dir))");
}

}  // namespace
}  // namespace batchd::testing
