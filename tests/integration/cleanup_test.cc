// Nothing of ours is left in /dev/shm: after close, after a client dies, after the daemon shuts down.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

TEST(CleanupTest, FileSystemSegmentLivesExactlyAsLongAsItsStream) {
  auto daemon = start_daemon("file_system");
  auto client = Client::connect(daemon.socket_path());
  ASSERT_TRUE(client.ok());
  {
    auto stream = client->open_stream(fmnist_options());
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    const std::string name = stream->info().segment_name;
    EXPECT_EQ(name.rfind("/dev/shm/batchd." + std::to_string(daemon.pid()) + ".", 0), 0u) << name;
    EXPECT_TRUE(std::filesystem::exists(name));
    EXPECT_EQ(std::filesystem::file_size(name), stream->info().segment_bytes);
    EXPECT_EQ(shm_names_of(daemon.pid()).size(), 1u) << "one name per stream, not per batch";
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(stream->next().ok());
    EXPECT_EQ(shm_names_of(daemon.pid()).size(), 1u);
    ASSERT_TRUE(stream->close().ok());
    EXPECT_FALSE(std::filesystem::exists(name)) << "close must unlink the segment";
  }
}

TEST(CleanupTest, FileDescriptorStrategyPutsNothingInDevShm) {
  auto daemon = start_daemon("file_descriptor");
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  EXPECT_TRUE(stream->info().segment_name.empty());
  auto batch = stream->next();
  ASSERT_TRUE(batch.ok() && *batch);
  EXPECT_TRUE(shm_names_of(daemon.pid()).empty());
}

TEST(CleanupTest, AKilledClientsSegmentsAreReclaimed) {
  auto daemon = start_daemon("file_system");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // A trainer that opens two streams, takes a batch and dies without closing anything.
    auto client = Client::connect(daemon.socket_path());
    auto a = client->open_stream(fmnist_options());
    auto b = client->open_stream(fmnist_options());
    auto batch = a.ok() ? a->next() : Result<std::optional<Batch>>(a.error());
    const char ok = (a.ok() && b.ok() && batch.ok()) ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    std::_Exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  EXPECT_EQ(shm_names_of(daemon.pid()).size(), 2u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(eventually([&] { return shm_names_of(daemon.pid()).empty(); }, std::chrono::milliseconds(1000)))
      << "segments of a dead client must be reclaimed within a second";
  // The daemon still serves.
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  EXPECT_TRUE(stream->next().ok());
}

TEST(CleanupTest, ShutdownFailsLiveStreamsClearlyAndUnlinksEverything) {
  auto daemon = start_daemon("file_system");
  const pid_t pid = daemon.pid();
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  auto held = stream->next();  // a lease held across the shutdown
  ASSERT_TRUE(held.ok() && *held);
  EXPECT_EQ(shm_names_of(pid).size(), 1u);
  auto status = daemon.stop();
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "status " << *status;
  EXPECT_TRUE(shm_names_of(pid).empty());
  EXPECT_FALSE(std::filesystem::exists(daemon.socket_path())) << "the socket file must be removed";
  // The client drains what was already delivered, then sees why the stream ended.
  Result<std::optional<Batch>> next = std::optional<Batch>();
  for (int i = 0; i < 10; ++i) {
    next = stream->next();
    if (!next.ok()) break;
  }
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(next.error().message().find("shutting down"), std::string::npos) << next.error().message();
  // The held batch is still readable: its mapping outlives the name.
  EXPECT_EQ((*held)->find("index")->shape[0], 100);
}

TEST(CleanupTest, SecondDaemonOnTheSameSocketIsRefused) {
  auto daemon = start_daemon();
  const std::string cmd = std::string(BATCHD_BIN_DIR "/batchd --socket ") + daemon.socket_path() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  const int status = ::pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(out.find("another batchd is already serving"), std::string::npos) << out;
  EXPECT_TRUE(Client::connect(daemon.socket_path()).ok()) << "the first daemon must be untouched";
}

}  // namespace
}  // namespace batchd::testing
