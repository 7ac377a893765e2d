// A skip stream over a long run of bad samples beside another connection's stream, on a real daemon: a token file
// truncated under the daemon leaves 20,000 windows that fail when read (on_error=skip). The Fashion-MNIST stream of
// the other connection has batches made while the skip stream works through the run (its second batch needs the
// whole run known bad, so it is still not made then); every batch of the skip stream holds exactly the windows its
// index tensor names, the rows made before a bad window included. No clock is asserted: the wait is only there so
// that a regression fails instead of hanging.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

constexpr uint32_t kSeqLen = 4;
constexpr uint64_t kGood = 150;     // windows left in the file after the truncation
constexpr uint64_t kBad = 20'000;   // windows cut off by it
constexpr uint64_t kWindows = kGood + kBad;

// Token k of the file is k (uint32): window i is i*T, ..., i*T + T.
std::string write_tokens(const std::string& path) {
  std::vector<uint32_t> tokens(kWindows * kSeqLen + 1);
  for (size_t k = 0; k < tokens.size(); ++k) tokens[k] = static_cast<uint32_t>(k);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 4));
  return "[datasets.lm]\nformat = \"tokens\"\npath = \"" + path + "\"\ndtype = \"uint32\"\nseq_len = " +
         std::to_string(kSeqLen) + "\n[datasets.fashion-mnist-test]\nformat = \"idx\"\nimages = \"" FMNIST_DIR
         "/t10k-images-idx3-ubyte.gz\"\nlabels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
}

// "" if every row of `batch` holds the window its `index` entry names, else what differs.
std::string rows_match_index(const Batch& batch) {
  const int64_t* index = batch.find("index")->data_as<int64_t>();
  const int64_t* inputs = batch.find("input_ids")->data_as<int64_t>();
  const int64_t* targets = batch.find("targets")->data_as<int64_t>();
  for (size_t j = 0; j < batch.size(); ++j) {
    for (uint32_t k = 0; k < kSeqLen; ++k) {
      const int64_t want = index[j] * kSeqLen + k;
      if (inputs[j * kSeqLen + k] != want || targets[j * kSeqLen + k] != want + 1) {
        return "batch " + std::to_string(batch.index()) + " row " + std::to_string(j) + " (window " +
               std::to_string(index[j]) + "): input " + std::to_string(inputs[j * kSeqLen + k]) + ", want " +
               std::to_string(want);
      }
    }
  }
  return "";
}

TEST(SkipRunTest, AnotherConnectionsStreamIsServedWhileASkipStreamWorksThroughTwentyThousandBadWindows) {
  const std::string dir = ::testing::TempDir() + "batchd-skip-run-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string tokens = dir + "/train.bin";
  std::ofstream(dir + "/batchd.toml") << write_tokens(tokens);
  auto daemon = start_daemon("", 2, {"--config", dir + "/batchd.toml"});
  // Truncated after the daemon mapped it: windows [kGood, kWindows) are bad samples from now on.
  ASSERT_EQ(::truncate(tokens.c_str(), static_cast<off_t>((kGood * kSeqLen + 1) * 4)), 0);

  auto skip_client = std::move(Client::connect(daemon.socket_path())).value();
  StreamOptions so;
  so.dataset = "lm";
  so.pipeline = "lm";
  so.batch_size = 100;
  so.shuffle = false;
  so.depth = 4;
  so.on_error = OnError::kSkip;
  auto skip = skip_client.open_stream(so);
  ASSERT_TRUE(skip.ok()) << skip.error().message();
  // The other connection's stream is never read here: with 64 slots the daemon makes its first 64 batches on its
  // own, as fast as the workers it is given allow, so what it made is the scheduler's doing, not this reader's.
  auto fm_client = std::move(Client::connect(daemon.socket_path())).value();
  StreamOptions fo = fmnist_options("fashion-mnist-test", 100);
  fo.depth = 64;
  auto fm = fm_client.open_stream(fo);
  ASSERT_TRUE(fm.ok()) << fm.error().message();

  // One status snapshot with both: the fmnist stream has 30 batches made while the skip stream has not made its
  // batch 1 (which needs the whole run known bad).
  constexpr uint64_t kWanted = 30;
  uint64_t fm_made = 0, skip_made = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (fm_made < kWanted && std::chrono::steady_clock::now() < give_up) {
    for (const auto& s : daemon_status(daemon.socket_path()).streams) {
      (s.dataset == "lm" ? skip_made : fm_made) = s.batches_delivered;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(fm_made, kWanted) << "the other connection's stream got " << fm_made << " batches while the skip stream "
                              << "worked through its run";
  EXPECT_LE(skip_made, 1u) << "the skip stream was still in its run of bad windows when the other stream had "
                           << kWanted << " batches";

  // The skip stream, to its end: window 0 replaces every bad one (the next good window in dataset order, wrapping).
  uint64_t skipped = 0, batches = 0;
  for (;;) {
    auto b = skip->next();
    ASSERT_TRUE(b.ok()) << b.error().message();
    if (!*b) break;
    const Batch& batch = **b;
    ++batches;
    skipped += batch.skipped();
    ASSERT_EQ(rows_match_index(batch), "");
    const int64_t* index = batch.find("index")->data_as<int64_t>();
    for (size_t j = 0; j < batch.size(); ++j) {
      const uint64_t original = batch.index() * 100 + j;
      ASSERT_EQ(index[j], original < kGood ? static_cast<int64_t>(original) : 0) << "batch " << batch.index() << " row " << j;
    }
  }
  EXPECT_EQ(batches, (kWindows + 99) / 100);
  EXPECT_EQ(skipped, kBad);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace batchd::testing
