// DatasetRegistry's life cycle of a dataset: opened now, loading in the background (a LoadJob) until install(),
// changed by a reload on any key, superseded jobs dropped; and DatasetLoader running jobs off the event loop.
#include "data/dataset.h"
#include "data/dataset_loader.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace batchd::daemon {
namespace {

// A real dataset with no file behind it (a tiny idx dataset needs files; this test is about the registry).
class FixedDataset final : public Dataset {
 public:
  FixedDataset(std::string name, uint64_t size) : name_(std::move(name)), size_(size) {}
  const std::string& name() const override { return name_; }
  const char* format() const override { return "fixed"; }
  uint64_t size() const override { return size_; }

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

TEST(DatasetLoaderTest, RunsJobsOffTheEventLoopAndInstallsTheirResultsOnIt) {
  boost::asio::io_context io;
  DatasetRegistry registry;
  std::vector<std::string> installed;
  DatasetLoader sut(io, registry, "", [&](const std::string& name) {
    installed.push_back(name);
    io.stop();
  });
  auto summary = registry.reload({shards("wds", "/nonexistent/batchd-loader-test-{0..1}.tar")}, {});
  sut.load(std::move(summary.jobs));
  boost::asio::steady_timer guard(io, std::chrono::seconds(30));
  guard.async_wait([&](const boost::system::error_code&) { io.stop(); });
  io.run();
  ASSERT_EQ(installed, std::vector<std::string>{"wds"});
  const auto d = registry.describe().at("wds");
  EXPECT_NE(d.state, DatasetRegistry::State::kLoading);  // opened (or refused with its reason) by the loader thread
  sut.stop();
  sut.stop();  // idempotent
}

}  // namespace
}  // namespace batchd::daemon
