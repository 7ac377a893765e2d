// Nothing of ours is left in /dev/shm: after close, after a client dies, after the daemon shuts down.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <grp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

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
    const std::string instance = instance_of(daemon);
    EXPECT_EQ(name.rfind("/dev/shm/batchd." + instance + ".", 0), 0u) << name;
    EXPECT_TRUE(std::filesystem::exists(name));
    EXPECT_EQ(std::filesystem::file_size(name), stream->info().segment_bytes);
    EXPECT_EQ(shm_names_of(instance).size(), 1u) << "one name per stream, not per batch";
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(stream->next().ok());
    EXPECT_EQ(shm_names_of(instance).size(), 1u);
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
  EXPECT_TRUE(shm_names_of(daemon).empty());
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
  const std::string instance = instance_of(daemon);
  EXPECT_EQ(shm_names_of(instance).size(), 2u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(eventually([&] { return shm_names_of(instance).empty(); }, std::chrono::milliseconds(1000)))
      << "segments of a dead client must be reclaimed within a second";
  // The daemon still serves.
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  EXPECT_TRUE(stream->next().ok());
}

TEST(CleanupTest, ShutdownFailsLiveStreamsClearlyAndUnlinksEverything) {
  auto daemon = start_daemon("file_system");
  const std::string instance = instance_of(daemon);
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  auto held = stream->next();  // a lease held across the shutdown
  ASSERT_TRUE(held.ok() && *held);
  EXPECT_EQ(shm_names_of(instance).size(), 1u);
  auto status = daemon.stop();
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "status " << *status;
  EXPECT_TRUE(shm_names_of(instance).empty());
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/batchd." + instance + ".lock")) << "a clean exit removes the lock";
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
  EXPECT_NE(out.find("another batchd (pid " + std::to_string(daemon.pid()) + ") is already serving"),
            std::string::npos)
      << out;
  EXPECT_TRUE(Client::connect(daemon.socket_path()).ok()) << "the first daemon must be untouched";
}

}  // namespace
}  // namespace batchd::testing

namespace batchd::testing {
namespace {

TEST(CleanupTest, SocketGetsTheConfiguredModeAndGroup) {
  const std::string config = ::testing::TempDir() + "batchd-group-test.toml";
  std::ofstream(config) << "[daemon]\nsocket_mode = \"0640\"\nsocket_group = \"daemon\"\n"
                        << "[datasets.fashion-mnist-test]\nformat = \"idx\"\n"
                        << "images = \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\"\n"
                        << "labels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
  auto daemon = start_daemon("", 1, {"--config", config});
  struct stat st {};
  ASSERT_EQ(::stat(daemon.socket_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  const group* g = ::getgrnam("daemon");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(st.st_gid, g->gr_gid);
}

TEST(CleanupTest, FileSystemSegmentLargerThanDevShmIsRefusedBeforeAllocating) {
  struct statvfs vfs {};
  ASSERT_EQ(::statvfs("/dev/shm", &vfs), 0);
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  // A slot of 65536 fmnist images is ~205 MB; ask for enough slots to exceed /dev/shm's free space.
  const uint64_t slot = 65536ull * (784 * 4 + 16);
  const uint64_t depth = free_bytes / slot + 2;
  if (depth > 4096) GTEST_SKIP() << "/dev/shm is too large (" << free_bytes << " bytes free) to exceed here";
  const std::string config = ::testing::TempDir() + "batchd-shm-test.toml";
  std::ofstream(config) << "[limits]\nmax_frame_bytes = 1048576\nmax_depth = 4096\nmax_segment_bytes = "
                        << (uint64_t{1} << 45) << "\nmax_shm_bytes = " << (uint64_t{1} << 45) << "\n"
                        << "[datasets.fashion-mnist-test]\nformat = \"idx\"\n"
                        << "images = \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\"\n"
                        << "labels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
  auto daemon = start_daemon("file_system", 1, {"--config", config});
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 65536);
  o.depth = static_cast<uint32_t>(depth);
  const auto start = std::chrono::steady_clock::now();
  auto stream = client->open_stream(o);
  ASSERT_FALSE(stream.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "refused without allocating";
  const std::string msg = stream.error().message();
  EXPECT_EQ(stream.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(msg.find("/dev/shm has only"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--shm-size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("remount,size="), std::string::npos) << msg;
  EXPECT_TRUE(shm_names_of(daemon).empty());
}

TEST(CleanupTest, TotalSegmentBudgetIsEnforcedAcrossStreams) {
  const std::string config = ::testing::TempDir() + "batchd-budget-test.toml";
  // One fashion-mnist-test stream of batch 100, depth 4 takes ~1.3 MB: the budget allows two.
  std::ofstream(config) << "[limits]\nmax_shm_bytes = 3000000\n"
                        << "[datasets.fashion-mnist-test]\nformat = \"idx\"\n"
                        << "images = \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\"\n"
                        << "labels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
  auto daemon = start_daemon("", 1, {"--config", config});
  auto client = Client::connect(daemon.socket_path());
  auto a = client->open_stream(fmnist_options());
  auto b = client->open_stream(fmnist_options());
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = client->open_stream(fmnist_options());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("limits.max_shm_bytes"), std::string::npos) << c.error().message();
  ASSERT_TRUE(a->close().ok());
  EXPECT_TRUE(client->open_stream(fmnist_options()).ok()) << "closing a stream returns its bytes to the budget";
}

}  // namespace
}  // namespace batchd::testing
