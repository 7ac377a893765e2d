// A sample that crashes the worker (here by fault injection: --fault-crash-on-sample) gets the stream's on_error
// policy after two crashes; workers are replaced; the daemon keeps serving.
#include <set>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

constexpr int64_t kPoison = 1234;


// Whole batches (depth 4, 2 workers), or chunks (depth 1, --min-chunk-us 0: each batch of 100 made in 2 chunks of
// 50 at once): poison detection is per sample either way, and skip gives the same samples.
struct Mode {
  uint32_t depth;
  std::vector<std::string> args;
};
const Mode kWhole{0, {}};
const Mode kChunks{1, {"--min-chunk-us", "0"}};

tools::SpawnedDaemon poison_daemon(const Mode& mode) {
  std::vector<std::string> args = {"--fault-crash-on-sample", std::to_string(kPoison)};
  args.insert(args.end(), mode.args.begin(), mode.args.end());
  return start_daemon("", 2, args);
}

void skip_replaces_a_crashing_sample(const Mode& mode) {
  auto daemon = poison_daemon(mode);
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.shuffle = false;
  o.num_epochs = 2;
  o.depth = mode.depth;
  o.on_error = OnError::kSkip;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  std::vector<std::multiset<int64_t>> epochs(2);
  size_t skipped = 0;
  for (;;) {
    auto batch = stream->next();
    ASSERT_TRUE(batch.ok()) << batch.error().message();
    if (!*batch) break;
    skipped += (*batch)->skipped();
    const Tensor* index = (*batch)->find("index");
    for (int64_t i = 0; i < index->numel(); ++i) epochs.at((*batch)->epoch()).insert(index->data_as<int64_t>()[i]);
  }
  for (const auto& e : epochs) {
    EXPECT_EQ(e.size(), 10000u);
    EXPECT_EQ(e.count(kPoison), 0u) << "the bad sample is never delivered";
    EXPECT_EQ(e.count(kPoison + 1), 2u) << "it is replaced by the next sample in dataset order";
  }
  EXPECT_EQ(skipped, 2u) << "one replacement per epoch";
  const auto st = daemon_status(daemon.socket_path());
  ASSERT_EQ(st.streams.size(), 1u);
  EXPECT_EQ(st.streams[0].samples_skipped, 2u);
  EXPECT_EQ(st.streams[0].worker_deaths, 2u) << "two crashes mark the sample bad; epoch 2 skips it up front";
  EXPECT_EQ(st.batches_redone, 2u);
  for (const auto& w : st.workers) EXPECT_GT(w.pid, 0);
}

TEST(PoisonTest, SkipReplacesACrashingSampleAndCountsIt) { skip_replaces_a_crashing_sample(kWhole); }
TEST(PoisonTest, SkipReplacesACrashingSampleAndCountsItWithChunks) { skip_replaces_a_crashing_sample(kChunks); }

void fail_ends_the_stream_naming_the_sample(const Mode& mode) {
  auto daemon = poison_daemon(mode);
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.shuffle = false;
  o.depth = mode.depth;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  Error error(ErrorCode::kInternal, "no error");
  uint64_t delivered = 0;
  for (;;) {
    auto batch = stream->next();
    if (!batch.ok()) {
      error = batch.error();
      break;
    }
    ASSERT_TRUE(*batch) << "the stream ended without failing";
    ASSERT_EQ((*batch)->index(), delivered++) << "batches arrive in order";
  }
  EXPECT_EQ(delivered, 12u) << "every batch before the bad one (batch 12 holds sample 1234) is delivered first";
  EXPECT_EQ(error.code(), ErrorCode::kDataError);
  EXPECT_NE(error.message().find("sample 1234 of dataset 'fashion-mnist-test' crashed 2 workers"), std::string::npos)
      << error.message();
  EXPECT_NE(error.message().find("Segmentation fault"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("on_error=skip"), std::string::npos) << error.message();
  // Everyone else is served.
  auto other = Client::connect(daemon.socket_path());
  auto s = other->open_stream(o);
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s->next().ok());
}

TEST(PoisonTest, FailEndsTheStreamNamingTheSampleAndTheSignal) { fail_ends_the_stream_naming_the_sample(kWhole); }
TEST(PoisonTest, FailEndsTheStreamNamingTheSampleAndTheSignalWithChunks) {
  fail_ends_the_stream_naming_the_sample(kChunks);
}

}  // namespace
}  // namespace batchd::testing
