// Hostile or broken clients: each affects only itself; the daemon keeps serving everyone else.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <filesystem>

#include <fstream>
#include <thread>

#include "batchd/wire/convert.h"
#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

void expect_serving(const std::string& socket) {
  auto client = Client::connect(socket);
  ASSERT_TRUE(client.ok());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  auto batch = stream->next();
  ASSERT_TRUE(batch.ok() && *batch) << (batch.ok() ? "end" : batch.error().message());
}

TEST(AbuseTest, TruncatedNamedSegmentFailsOnlyItsStreamAfterBoundedWorkerRestarts) {
  auto daemon = start_daemon("file_system", 2);
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options();
  o.depth = 2;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  auto a = stream->next();
  auto b = stream->next();
  ASSERT_TRUE(a.ok() && *a && b.ok() && *b);
  // Another process with the same uid shrinks the segment under everyone's mappings.
  const int fd = ::open(stream->info().segment_name.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 0), 0);
  ::close(fd);
  (*a)->release();  // the next batch goes into this slot: every worker that tries dies of SIGBUS
  auto failed = stream->next();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), ErrorCode::kDataError);
  EXPECT_NE(failed.error().message().find("crashed 2 workers (killed by signal Bus error"), std::string::npos)
      << failed.error().message();
  b->reset();  // never touch the truncated mapping again
  expect_serving(daemon.socket_path());
}

TEST(AbuseTest, AbsurdWorldSizeIsRefused) {
  auto daemon = start_daemon();
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options();
  o.world_size = 4294967295u;
  o.rank = 7;
  auto stream = client->open_stream(o);
  ASSERT_FALSE(stream.ok());
  EXPECT_NE(stream.error().message().find("world_size 4294967295"), std::string::npos) << stream.error().message();
  expect_serving(daemon.socket_path());
}

TEST(AbuseTest, ClientThatNeverReadsRepliesCannotGrowTheDaemon) {
  auto daemon = start_daemon();
  const long before = rss_kib(daemon.pid());
  constexpr int kRequests = 200000;  // ~100 MB of StatusReply frames if the daemon queued them all
  RawConnection raw(daemon.socket_path());
  std::thread writer([&] {
    wire::Request r;
    r.mutable_status();
    std::string burst;
    for (int i = 0; i < kRequests; ++i) burst += *wire::encode_frame(r);
    raw.send_bytes(burst);  // blocks once the daemon stops reading
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const long during = rss_kib(daemon.pid());
  expect_serving(daemon.socket_path());
  int replies = 0;
  while (replies < kRequests && raw.read_reply()) ++replies;
  writer.join();
  EXPECT_EQ(replies, kRequests) << "back-pressure must delay replies, never drop them";
  EXPECT_LT(during - before, 32 * 1024) << "RSS grew from " << before << " KiB to " << during << " KiB";
}

TEST(AbuseTest, StaleSegmentsOfGoneInstancesAreRemovedAtStartUp) {
  // An instance that is gone: its lock file is there and nobody holds it (as after a SIGKILL).
  char gone[17];
  std::snprintf(gone, sizeof(gone), "%016llx", 0xdead000000000000ull | static_cast<unsigned>(::getpid()));
  const std::string stale = "/dev/shm/batchd." + std::string(gone) + ".1";
  const std::string stale_lock = "/dev/shm/batchd." + std::string(gone) + ".lock";
  // Named by an older batchd after a pid: nothing proves that daemon gone, so the daemon leaves it.
  const std::string legacy = "/dev/shm/batchd." + std::to_string(::getpid()) + ".2";
  const std::string foreign = "/dev/shm/batchd.test-foreign." + std::to_string(::getpid());
  for (const auto& p : {stale, stale_lock, legacy, foreign}) std::ofstream(p) << "x";
  auto daemon = start_daemon();
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_FALSE(std::filesystem::exists(stale_lock));
  EXPECT_TRUE(std::filesystem::exists(legacy)) << "legacy names are for batchctl shm --gc";
  EXPECT_TRUE(std::filesystem::exists(foreign)) << "names that are not batchd's are left alone";
  std::filesystem::remove(legacy);
  std::filesystem::remove(foreign);
}

}  // namespace
}  // namespace batchd::testing
