// Several trainers at once: each gets its own exactly-once epochs, whatever the others do.
#include <set>
#include <thread>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

TEST(ConcurrencyTest, FourClientsReadTheirOwnEpochsConcurrently) {
  auto daemon = start_daemon("", 2);
  constexpr int kClients = 4;
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = Client::connect(daemon.socket_path());
      if (!client.ok()) return void(failures[c] = client.error().message());
      auto o = fmnist_options("fashion-mnist-test", 50 + 25 * c);
      o.seed = c;
      o.num_epochs = 2;
      o.strategy = c % 2 ? SharingStrategy::kFileSystem : SharingStrategy::kFileDescriptor;
      auto stream = client->open_stream(o);
      if (!stream.ok()) return void(failures[c] = stream.error().message());
      failures[c] = check_exactly_once(*stream, 2, 10000);
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(failures[c], "") << "client " << c;
  const std::string instance = instance_of(daemon);
  EXPECT_TRUE(eventually([&] { return shm_names_of(instance).empty(); }));
}

TEST(ConcurrencyTest, TwoStreamsOnOneConnectionInterleave) {
  auto daemon = start_daemon();
  auto client = Client::connect(daemon.socket_path());
  auto a = client->open_stream(fmnist_options("fashion-mnist-test", 500));
  auto b = client->open_stream(fmnist_options("fashion-mnist", 1000));
  ASSERT_TRUE(a.ok() && b.ok());
  std::set<int64_t> seen_a, seen_b;
  for (int i = 0; i < 20; ++i) {
    auto x = a->next();
    auto y = b->next();
    ASSERT_TRUE(x.ok() && *x && y.ok() && *y);
    const Tensor* ix = (*x)->find("index");
    const Tensor* iy = (*y)->find("index");
    seen_a.insert(ix->data_as<int64_t>(), ix->data_as<int64_t>() + ix->numel());
    seen_b.insert(iy->data_as<int64_t>(), iy->data_as<int64_t>() + iy->numel());
  }
  EXPECT_EQ(seen_a.size(), 10000u);
  EXPECT_EQ(seen_b.size(), 20000u);
}

TEST(ConcurrencyTest, BatchesReleasedOnAnotherThreadKeepTheStreamFlowing) {
  auto daemon = start_daemon();
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.depth = 3;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  std::vector<std::thread> releasers;
  size_t batches = 0;
  for (;;) {
    auto batch = stream->next();
    ASSERT_TRUE(batch.ok()) << batch.error().message();
    if (!*batch) break;
    ++batches;
    releasers.emplace_back([b = std::move(**batch)]() mutable {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      b.release();
    });
    if (releasers.size() >= 2) {  // never hold all `depth` leases
      releasers.front().join();
      releasers.erase(releasers.begin());
    }
  }
  for (auto& t : releasers) t.join();
  EXPECT_EQ(batches, 100u);
}

}  // namespace
}  // namespace batchd::testing
