// DatasetRegistry's life cycle of a dataset: opened now, loading in the background (a LoadJob) until install(),
// changed by a reload on any key, superseded jobs dropped; and DatasetLoader running jobs off the event loop.
#include "data/dataset.h"
#include "data/dataset_loader.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <thread>

#include "tar_writers.h"

namespace batchd::daemon {
namespace {

// A real dataset with no file behind it (a tiny idx dataset needs files; this test is about the registry).
class FixedDataset final : public Dataset {
 public:
  FixedDataset(std::string name, uint64_t size) : name_(std::move(name)), size_(size) {}
  const std::string& name() const override { return name_; }
  const char* format() const override { return "fixed"; }
  uint64_t size() const override { return size_; }
  std::string changed_on_disk() const override { return *changed_; }
  std::shared_ptr<std::string> changed_ = std::make_shared<std::string>();

 private:
  std::string name_;
  uint64_t size_;
};

std::shared_ptr<const Dataset> fixed(const std::string& name, uint64_t size) {
  return std::make_shared<const FixedDataset>(name, size);
}

DatasetConfig shards(const std::string& name, const std::string& pattern) {
  DatasetConfig c;
  c.name = name;
  c.format = "webdataset";
  c.shards = {pattern};
  return c;
}

TEST(DatasetRegistryTest, ABackgroundDatasetIsIndexingUntilInstalled) {
  DatasetRegistry sut;
  auto summary = sut.reload({shards("wds", "/nonexistent/a-{0..3}.tar")}, {});
  ASSERT_EQ(summary.jobs.size(), 1u);
  EXPECT_EQ(summary.added, std::vector<std::string>{"wds"});
  auto refused = sut.find("wds");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message().find("indexing (listing its shards)"), std::string::npos);
  summary.jobs[0].progress->total = 4;
  summary.jobs[0].progress->done = 1;
  EXPECT_NE(sut.find("wds").error().message().find("indexing (1 of 4 shards)"), std::string::npos);
  EXPECT_EQ(sut.describe().at("wds").state, DatasetRegistry::State::kLoading);
  EXPECT_EQ(sut.describe().at("wds").detail, "indexing (1 of 4 shards)");

  EXPECT_TRUE(sut.install(summary.jobs[0], fixed("wds", 7)));
  auto ds = sut.find("wds");
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  EXPECT_EQ((*ds)->size(), 7u);
  EXPECT_TRUE(sut.find_key(sut.key("wds")).ok());
  EXPECT_FALSE(sut.install(summary.jobs[0], fixed("wds", 8)));  // taken already
}

TEST(DatasetRegistryTest, AFailedBackgroundOpenIsUnavailableWithItsReason) {
  DatasetRegistry sut;
  auto summary = sut.reload({shards("wds", "/x.tar")}, {});
  ASSERT_TRUE(sut.install(summary.jobs[0], Error(ErrorCode::kDataError, "/x.tar: truncated at offset 1024")));
  auto refused = sut.find("wds");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("truncated at offset 1024"), std::string::npos);
  EXPECT_EQ(sut.describe().at("wds").state, DatasetRegistry::State::kUnavailable);
}

TEST(DatasetRegistryTest, AReloadNoticesAChangeToAnyKeyAndSupersedesTheLoadUnderWay) {
  DatasetRegistry sut;
  auto first = sut.reload({shards("wds", "/a.tar")}, {});
  ASSERT_TRUE(sut.install(first.jobs[0], fixed("wds", 3)));
  const std::string old_key = sut.key("wds");

  // Same entry: kept as loaded, no job.
  auto same = sut.reload({shards("wds", "/a.tar")}, {});
  EXPECT_TRUE(same.jobs.empty());
  EXPECT_TRUE(same.changed.empty());
  EXPECT_EQ(sut.key("wds"), old_key);

  // Only label_field differs: a change (before issue 15 only format/images/labels/root were compared).
  DatasetConfig relabelled = shards("wds", "/a.tar");
  relabelled.label_field = "label";
  auto changed = sut.reload({relabelled}, {old_key});
  EXPECT_EQ(changed.changed, std::vector<std::string>{"wds"});
  ASSERT_EQ(changed.jobs.size(), 1u);
  EXPECT_TRUE(sut.find_key(old_key).ok()) << "a stream still reads the old data: it is retired, not dropped";

  // A second change while the first job runs: the first is cancelled and its result dropped.
  DatasetConfig again = relabelled;
  again.image_field = "png";
  auto superseding = sut.reload({again}, {});
  EXPECT_TRUE(changed.jobs[0].progress->cancel);
  EXPECT_FALSE(sut.install(changed.jobs[0], fixed("wds", 4)));
  EXPECT_FALSE(sut.find("wds").ok());
  ASSERT_TRUE(sut.install(superseding.jobs[0], fixed("wds", 5)));
  EXPECT_EQ((*sut.find("wds"))->size(), 5u);

  // Removed while loading: reported, and its job cancelled.
  auto relisted = sut.reload({shards("other", "/b.tar")}, {});
  auto removed = sut.reload({}, {});
  EXPECT_EQ(removed.removed, (std::vector<std::string>{"other"}));
  EXPECT_TRUE(relisted.jobs[0].progress->cancel);
}

TEST(DatasetRegistryTest, AReloadOpensAgainADatasetWhoseFilesChangedThoughItsConfigDidNot) {
  DatasetRegistry sut;
  auto first = sut.reload({shards("wds", "/a-*.tar")}, {});
  auto loaded = std::make_shared<FixedDataset>("wds", 3);
  ASSERT_TRUE(sut.install(first.jobs[0], std::shared_ptr<const Dataset>(loaded)));
  EXPECT_TRUE(sut.reload({shards("wds", "/a-*.tar")}, {}).jobs.empty()) << "files unchanged: nothing to do";

  *loaded->changed_ = "its shards now expand to 3 files (2 were indexed)";
  auto again = sut.reload({shards("wds", "/a-*.tar")}, {});
  EXPECT_EQ(again.changed, std::vector<std::string>{"wds"});
  EXPECT_EQ(again.changed_on_disk.at("wds"), "its shards now expand to 3 files (2 were indexed)");
  ASSERT_EQ(again.jobs.size(), 1u);
  EXPECT_FALSE(sut.find("wds").ok()) << "indexing again";
}

// Runs the event loop until `name` is no longer loading (or 60 s).
void run_until_loaded(boost::asio::io_context& io, const DatasetRegistry& registry, const std::string& name) {
  boost::asio::steady_timer poll(io);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::function<void()> check = [&] {
    if (registry.describe().at(name).state != DatasetRegistry::State::kLoading ||
        std::chrono::steady_clock::now() > deadline) {
      io.stop();
      return;
    }
    poll.expires_after(std::chrono::milliseconds(5));
    poll.async_wait([&](const boost::system::error_code&) { check(); });
  };
  check();
  io.run();
  io.restart();
}

// A loader on a real event loop, a registry, and one real shard of one sample; `installed` lists on_installed calls.
class DatasetLoaderTest : public ::testing::Test {
 protected:
  DatasetLoaderTest() {
    testing::python_tar(dir_ / "shard-0.tar", {{"a.jpg", "jpeg bytes"}, {"a.cls", "3"}});
  }
  // Declares dataset "wds" over `pattern` and hands its job to the loader; returns the job's progress.
  std::shared_ptr<LoadProgress> load(const std::string& pattern) {
    auto summary = registry_.reload({shards("wds", pattern)}, {});
    auto progress = summary.jobs.at(0).progress;
    sut_.load(std::move(summary.jobs));
    return progress;
  }

  testing::ScratchDir dir_{"loader"};
  boost::asio::io_context io_;
  DatasetRegistry registry_;
  std::vector<std::string> installed_;
  DatasetLoader sut_{io_, registry_, "", [this](const std::string& name) { installed_.push_back(name); }};
};

TEST_F(DatasetLoaderTest, RunsJobsOffTheEventLoopAndInstallsTheirResultsOnIt) {
  load(dir_ / "shard-*.tar");
  run_until_loaded(io_, registry_, "wds");
  EXPECT_EQ(installed_, std::vector<std::string>{"wds"}) << "the workers are re-forked to hold the new dataset";
  auto ds = registry_.find("wds");
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  EXPECT_EQ((*ds)->size(), 1u);
  sut_.stop();
  sut_.stop();  // idempotent
}

TEST_F(DatasetLoaderTest, AFailedOpenIsUnavailableAndRestartsNoWorker) {
  load("/nonexistent/batchd-loader-test-{0..1}.tar");
  run_until_loaded(io_, registry_, "wds");
  const auto d = registry_.describe().at("wds");
  EXPECT_EQ(d.state, DatasetRegistry::State::kUnavailable);
  EXPECT_NE(d.detail.find("/nonexistent/batchd-loader-test-0.tar"), std::string::npos) << d.detail;
  EXPECT_TRUE(installed_.empty()) << "nothing new was installed: the workers keep running";
}

TEST_F(DatasetLoaderTest, ResultsPostedBeforeCancelAreNotInstalled) {
  const auto progress = load(dir_ / "shard-*.tar");
  // Let the thread finish and post its result; the loop has not run, so the result waits on it.
  for (int i = 0; i < 6000 && progress->done.load() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(progress->done.load(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  sut_.stop();  // SIGTERM: cancel, then (after the loop) join
  io_.run_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(installed_.empty());
  EXPECT_EQ(registry_.describe().at("wds").state, DatasetRegistry::State::kLoading);
}

}  // namespace
}  // namespace batchd::daemon
