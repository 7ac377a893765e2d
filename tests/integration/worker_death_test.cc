// Workers killed mid-stream are replaced and their batches redone: the client sees every index exactly once.
#include <signal.h>

#include <set>

#include "batchd/wire/convert.h"
#include "daemon_fixture.h"

namespace batchd::testing {
namespace {


TEST(WorkerDeathTest, KilledWorkersAreReplacedAndNoSampleIsLostOrDuplicated) {
  auto daemon = start_daemon("", 2);
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist", 64);
  o.num_epochs = 2;
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
  const auto workers = daemon_status(daemon.socket_path()).workers;
  ASSERT_EQ(workers.size(), 2u);
  for (const auto& w : workers) {
    EXPECT_GT(w.pid, 0);
    restarts += w.restarts;
  }
  EXPECT_EQ(restarts, static_cast<uint64_t>(kills));
}

}  // namespace
}  // namespace batchd::testing
