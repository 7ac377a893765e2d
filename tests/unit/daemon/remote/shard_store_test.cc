// ShardStore (remote/shard_store.h) against a real HTTP server (tests/remote/fault_server.py): files and leftovers,
// the byte bound and the eviction order, pins, waiting tasks, prefetch, failures.
#include "remote/shard_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "fault_server_fixture.h"

namespace batchd::daemon::remote {
namespace {

using testing::FaultServer;
namespace fs = std::filesystem;

class ShardStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("shard-store-test-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "srv" / "b");
    for (int i = 0; i < 5; ++i) {
      std::ofstream(root_ / "srv" / "b" / ("s" + std::to_string(i) + ".tar")) << std::string(1000, char('a' + i));
    }
    server_ = std::make_unique<FaultServer>(root_ / "srv", std::vector<std::string>{});
    ASSERT_TRUE(server_->ok());
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(root_);
  }

  std::shared_ptr<ShardStore> open(int64_t max_bytes) {
    ShardStoreOptions o;
    o.dir = (root_ / "cache").string();
    o.max_bytes = max_bytes;
    o.concurrency = 2;
    o.http.retries = 0;
    o.http.backoff_max_s = 0.1;  // the failed cool-down is max(1 s, 4 x this)
    auto store = ShardStore::open(o);
    EXPECT_TRUE(store.ok()) << store.error().message();
    return store.ok() ? *store : nullptr;
  }
  RemoteObject object(int i) {
    ObjectStore os(HttpSettings{}, AwsSettings{});
    auto o = os.stat(server_->url() + "/b/s" + std::to_string(i) + ".tar");
    EXPECT_TRUE(o.ok()) << o.error().message();
    return o.ok() ? *o : RemoteObject{};
  }
  std::vector<std::string> files(const std::string& suffix) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(root_ / "cache")) {
      const std::string name = e.path().filename().string();
      if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        out.push_back(name);
      }
    }
    return out;
  }

  fs::path root_;
  std::unique_ptr<FaultServer> server_;
};

TEST_F(ShardStoreTest, FetchesWholeFilesOfMode0600AndLeavesNoPartFile) {
  auto store = open(1 << 20);
  const uint32_t id = store->add(object(0), nullptr, "ds");
  ASSERT_TRUE(store->fetch_now(id, nullptr).ok());
  std::ifstream in(store->path(id));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, std::string(1000, 'a'));
  struct stat st {};
  ASSERT_EQ(::stat(store->path(id).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(files(".part").empty());
  EXPECT_EQ(store->status().totals.fetched, 1u);
  EXPECT_EQ(store->dataset_view("ds", {id}).shards_here, 1u);
  // A reload whose shard list changed: its view counts the shards it names, not those of the load before it.
  const uint32_t other = store->add(object(1), nullptr, "ds");
  EXPECT_EQ(store->dataset_view("ds", {other}).shards, 1u);
  EXPECT_EQ(store->dataset_view("ds", {other}).shards_here, 0u);
  EXPECT_EQ(store->dataset_view("ds", {other}).totals.fetched, 1u) << "the counters are the dataset's, all loads";
  EXPECT_EQ(store->add(object(0), nullptr, "other"), id) << "one copy per host, whoever names it";
}

TEST_F(ShardStoreTest, OpenRemovesLeftoversAndKeepsCompleteShardsForTheDatasetThatNamesThem) {
  uint32_t id = 0;
  std::string path;
  {
    auto store = open(1 << 20);
    id = store->add(object(1), nullptr, "ds");
    ASSERT_TRUE(store->fetch_now(id, nullptr).ok());
    path = store->path(id);
  }
  std::ofstream(path.substr(0, path.size() - 4) + "ffff.tar.part") << "half a shard";  // a crash mid-download
  std::ofstream(path + ".error") << "old";
  auto store = open(1 << 20);
  EXPECT_TRUE(files(".part").empty());
  EXPECT_TRUE(files(".error").empty());
  EXPECT_EQ(store->status().bytes, 1000u) << "the complete shard counts in the bound";
  id = store->add(object(1), nullptr, "ds");
  auto ready = store->acquire({id}, 1);
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(*ready, ShardStore::Readiness::kReady) << "found on disk: not fetched again";
  EXPECT_EQ(store->status().totals.fetched, 0u);
  store->release({id});
}

TEST_F(ShardStoreTest, TheBoundEvictsShardsNotReadAgainThisEpochFirstThenTheLeastRecentlyUsed) {
  auto store = open(2500);  // two shards of 1000 bytes fit
  const uint32_t a = store->add(object(0), nullptr, "ds"), b = store->add(object(1), nullptr, "ds"),
                 c = store->add(object(2), nullptr, "ds"), d = store->add(object(3), nullptr, "ds");
  ASSERT_TRUE(store->fetch_now(a, nullptr).ok());
  ASSERT_TRUE(store->fetch_now(b, nullptr).ok());
  // A stream at position 10 reads `a` again at 50 and `b` last at 5: b goes although a is older.
  std::unordered_map<uint32_t, uint64_t> last_use{{a, 50}, {b, 5}};
  store->set_demand(7, {}, 10, &last_use);
  ASSERT_TRUE(store->fetch_now(c, nullptr).ok());
  EXPECT_TRUE(fs::exists(store->path(a)));
  EXPECT_FALSE(fs::exists(store->path(b)));
  EXPECT_LE(store->status().bytes, 2500u);
  // Both a and c are read again: the least recently used (a) goes; a pinned shard never does.
  last_use = {{a, 50}, {c, 60}};
  store->set_demand(7, {}, 10, &last_use);
  ASSERT_EQ(*store->acquire({c}, 1), ShardStore::Readiness::kReady);
  ASSERT_TRUE(store->fetch_now(d, nullptr).ok());
  EXPECT_FALSE(fs::exists(store->path(a)));
  EXPECT_TRUE(fs::exists(store->path(c)));
  EXPECT_EQ(store->status().totals.evicted, 2u);
  EXPECT_EQ(store->dataset_view("ds", {a, b, c, d}).shards_here, 2u);
  // Nothing can go while c and d are being read: a load that needs a third shard waits until a task lets one go.
  ASSERT_EQ(*store->acquire({d}, 1), ShardStore::Readiness::kReady);
  std::atomic<bool> done{false};
  std::thread loader([&] {
    EXPECT_TRUE(store->fetch_now(a, nullptr).ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done.load()) << "fetched past the bound";
  EXPECT_LE(store->status().bytes, 2500u);
  store->release({c});
  loader.join();
  EXPECT_TRUE(fs::exists(store->path(a)));
  EXPECT_FALSE(fs::exists(store->path(c)));
  EXPECT_TRUE(fs::exists(store->path(d))) << "pinned";
  // Once nothing is pinned or under way, a shard that cannot fit is refused, naming the key.
  store->release({d});
  auto too_big = store->acquire({a, b, c}, 1);
  ASSERT_FALSE(too_big.ok()) << "one task's shards beyond the bound can never run";
  EXPECT_EQ(too_big.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(too_big.error().message().find("remote.cache_max_bytes"), std::string::npos);
}

TEST_F(ShardStoreTest, AWaitingTaskGetsItsShardsFetchedAndIsToldWhenTheyArrive) {
  auto store = open(1 << 20);
  std::mutex mu;
  std::condition_variable cv;
  int changes = 0;
  store->set_on_change([&] {
    std::lock_guard lock(mu);
    ++changes;
    cv.notify_all();
  });
  const uint32_t a = store->add(object(0), nullptr, "ds"), b = store->add(object(1), nullptr, "ds");
  auto first = store->acquire({a, b}, 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, ShardStore::Readiness::kWaiting);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return changes >= 2; }));
  }
  EXPECT_EQ(*store->acquire({a, b}, 1), ShardStore::Readiness::kReady);
  const FetchTotals t = store->status().totals;
  EXPECT_EQ(t.waited, 2u);
  EXPECT_EQ(t.fetched, 2u);
  EXPECT_EQ(t.prefetched, 0u);
  store->release({a, b});
  store->stop();
}

TEST_F(ShardStoreTest, AShardStillBeingFetchedWhenItsWaitingTaskWasDroppedCanBeEvictedOnceItArrives) {
  server_ = std::make_unique<FaultServer>(root_ / "srv", std::vector<std::string>{"--latency", "0.3"});
  ASSERT_TRUE(server_->ok());
  auto store = open(1500);  // one shard fits
  const uint32_t a = store->add(object(0), nullptr, "ds"), b = store->add(object(1), nullptr, "ds");
  ASSERT_EQ(*store->acquire({a}, 1), ShardStore::Readiness::kWaiting);
  store->unhold(1);  // the task's stream closed while `a` was being fetched for it
  for (int i = 0; i < 200 && store->status().totals.fetched < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(store->status().totals.fetched, 1u);
  auto next = store->fetch_now(b, nullptr);
  EXPECT_TRUE(next.ok()) << "a shard no task waits for any more must make room: " << next.error().message();
  EXPECT_FALSE(fs::exists(store->path(a)));
}

TEST_F(ShardStoreTest, AStreamsAheadListIsFetchedBeforeAnyTaskAsks) {
  auto store = open(1 << 20);
  std::vector<uint32_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(store->add(object(i), nullptr, "ds"));
  store->set_demand(1, ids, 0, nullptr);
  for (int i = 0; i < 200 && store->status().totals.fetched < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const FetchTotals t = store->status().totals;
  EXPECT_EQ(t.fetched, 4u);
  EXPECT_EQ(t.prefetched, 4u);
  EXPECT_EQ(*store->acquire(ids, 1), ShardStore::Readiness::kReady);
  EXPECT_EQ(store->status().totals.waited, 0u);
  store->release(ids);
}

TEST_F(ShardStoreTest, AFailedFetchLeavesItsReasonForTheWorkersAndLetsTheTaskRunUntilTheCoolDownEnds) {
  auto store = open(1 << 20);
  RemoteObject gone = object(4);
  fs::remove(root_ / "srv" / "b" / "s4.tar");  // listed, then deleted on the server: 404 at fetch
  const uint32_t id = store->add(gone, nullptr, "ds");
  auto failed = store->fetch_now(id, nullptr);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), ErrorCode::kNotFound) << failed.error().message();
  std::ifstream in(store->path(id) + ".error");
  const std::string reason((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(reason.find("/b/s4.tar"), std::string::npos) << reason;
  EXPECT_NE(reason.find("404"), std::string::npos) << reason;
  EXPECT_EQ(*store->acquire({id}, 1), ShardStore::Readiness::kReady) << "its samples fail, naming the reason";
  store->release({id});
  EXPECT_EQ(store->status().totals.failed, 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(*store->acquire({id}, 1), ShardStore::Readiness::kWaiting) << "after the cool-down it is tried again";
}

TEST_F(ShardStoreTest, TwoWaitingTasksCannotBlockEachOtherTheOldestGetsItsShardsFirst) {
  auto store = open(2500);  // two shards
  std::mutex mu;
  std::condition_variable cv;
  store->set_on_change([&] { cv.notify_all(); });
  const uint32_t s0 = store->add(object(0), nullptr, "ds"), s1 = store->add(object(1), nullptr, "ds"),
                 s2 = store->add(object(2), nullptr, "ds"), s3 = store->add(object(3), nullptr, "ds");
  ASSERT_TRUE(store->fetch_now(s0, nullptr).ok());
  ASSERT_TRUE(store->fetch_now(s2, nullptr).ok());
  // Stream 1 waits for {s0, s1} (s0 here, held for it), then stream 2 for {s2, s3} (s2 here, held for it): the cache
  // is full of held shards. The older wait wins: s2 goes to make room for s1 (without that rule: stuck for good).
  ASSERT_EQ(*store->acquire({s2}, 3), ShardStore::Readiness::kReady);  // a running task reads s2: no room yet
  ASSERT_EQ(*store->acquire({s0, s1}, 1), ShardStore::Readiness::kWaiting);
  ASSERT_EQ(*store->acquire({s2, s3}, 2), ShardStore::Readiness::kWaiting);
  store->release({s2});  // now s0 is held for stream 1 and s2 for stream 2, and each needs one more shard
  auto wait_ready = [&](std::vector<uint32_t> ids, uint64_t waiter) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] {
      return *store->acquire(ids, waiter) == ShardStore::Readiness::kReady;
    });
  };
  ASSERT_TRUE(wait_ready({s0, s1}, 1)) << "the oldest waiting task never ran";
  store->release({s0, s1});
  ASSERT_TRUE(wait_ready({s2, s3}, 2)) << "the second never ran once the first was done";
  store->release({s2, s3});
  EXPECT_LE(store->status().bytes, 2500u);
}

TEST_F(ShardStoreTest, AShardRemovedBySomeoneElseIsFetchedAgain) {
  auto store = open(1 << 20);
  const uint32_t id = store->add(object(0), nullptr, "ds");
  ASSERT_TRUE(store->fetch_now(id, nullptr).ok());
  fs::remove(store->path(id));
  EXPECT_EQ(*store->acquire({id}, 1), ShardStore::Readiness::kWaiting);
}

}  // namespace
}  // namespace batchd::daemon::remote
