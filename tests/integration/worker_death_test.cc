// Workers killed mid-stream are replaced and their batches redone: the client sees every index exactly once.
#include <signal.h>

#include <set>

#include "batchd/wire/convert.h"
#include "daemon_fixture.h"

namespace batchd::testing {
namespace {


// Reads two epochs of Fashion-MNIST while killing every worker now and then; checks exactly-once and restarts.
void read_while_killing_workers(uint32_t workers, uint32_t depth, std::vector<std::string> daemon_args) {
  auto daemon = start_daemon("", workers, std::move(daemon_args));
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist", 64);
  o.num_epochs = 2;
  o.depth = depth;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  std::vector<std::multiset<int64_t>> epochs(2);
  int kills = 0;
  for (uint64_t n = 0;; ++n) {
    if (n % 150 == 10) {  // kill both workers, several times over the two epochs
      const auto status = daemon_status(daemon.socket_path());
      for (const auto& w : status.workers) {
        if (w.pid > 0 && ::kill(w.pid, SIGKILL) == 0) ++kills;
      }
    }
    auto batch = stream->next();
    ASSERT_TRUE(batch.ok()) << batch.error().message();
    if (!*batch) break;
    const Tensor* index = (*batch)->find("index");
    for (int64_t i = 0; i < index->numel(); ++i) epochs.at((*batch)->epoch()).insert(index->data_as<int64_t>()[i]);
  }
  EXPECT_GE(kills, 6);
  for (const auto& e : epochs) {
    EXPECT_EQ(e.size(), 60000u);
    EXPECT_EQ(std::set<int64_t>(e.begin(), e.end()).size(), 60000u);
  }
  uint64_t restarts = 0;
  const auto rows = daemon_status(daemon.socket_path()).workers;
  ASSERT_EQ(rows.size(), workers);
  for (const auto& w : rows) {
    EXPECT_GT(w.pid, 0);
    restarts += w.restarts;
  }
  EXPECT_EQ(restarts, static_cast<uint64_t>(kills));
}

TEST(WorkerDeathTest, KilledWorkersAreReplacedAndNoSampleIsLostOrDuplicated) {
  read_while_killing_workers(2, 0, {});
}

// Depth 1 with 3 workers and no lower bound on chunks: every batch is made in 3 chunks at once, so each kill lands
// in the middle of a chunk; the chunk is redone, the batch delivered once.
TEST(WorkerDeathTest, WorkersKilledMidChunkHaveOnlyTheirChunkRedone) {
  read_while_killing_workers(3, 1, {"--min-chunk-us", "0"});
}

}  // namespace
}  // namespace batchd::testing
