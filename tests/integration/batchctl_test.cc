// batchctl against a live daemon: status and shm, human and JSON.
#include <google/protobuf/util/json_util.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

TEST(BatchctlTest, StatusAndShmShowWorkersStreamsAndSegments) {
  auto daemon = start_daemon("file_system", 3);
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  auto batch = stream->next();  // one lease held
  ASSERT_TRUE(batch.ok() && *batch);

  auto run = batchctl("--socket " + daemon.socket_path() + " status --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  wire::StatusReply status;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &status).ok()) << run.out;
  EXPECT_EQ(status.daemon_pid(), daemon.pid());
  EXPECT_EQ(status.instance_id(), instance_of(daemon));
  EXPECT_EQ(status.workers_size(), 3);
  ASSERT_EQ(status.streams_size(), 1);
  EXPECT_EQ(status.streams(0).dataset(), "fashion-mnist-test");
  EXPECT_EQ(status.streams(0).client_pid(), ::getpid());
  ASSERT_EQ(status.segments_size(), 1);
  const auto& seg = status.segments(0);
  EXPECT_EQ(seg.owner_pid(), ::getpid());
  EXPECT_EQ(seg.owner_uid(), ::getuid());
  EXPECT_EQ(seg.name(), stream->info().segment_name);
  EXPECT_EQ(seg.bytes(), stream->info().segment_bytes);
  EXPECT_GE(seg.slots_leased(), 1u);
  EXPECT_EQ(seg.slots_free() + seg.slots_working() + seg.slots_ready() + seg.slots_leased(), seg.slots());

  run = batchctl("--socket " + daemon.socket_path() + " shm --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  wire::ShmReport shm;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &shm).ok()) << run.out;
  EXPECT_TRUE(shm.daemon_reachable());
  EXPECT_EQ(shm.daemon_pid(), daemon.pid());
  EXPECT_EQ(shm.segments_size(), 1);
  ASSERT_EQ(shm.clients_size(), 1);
  EXPECT_EQ(shm.clients(0).pid(), ::getpid());
  EXPECT_EQ(shm.clients(0).segment_fds(), 0) << "the client keeps no fd open: its mapping is enough";
  EXPECT_EQ(shm.clients(0).segment_mappings(), 1);
  EXPECT_GT(shm.shm_total_bytes(), 0u);

  run = batchctl("--socket " + daemon.socket_path() + " shm");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find(stream->info().segment_name), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("leased"), std::string::npos) << run.out;

  run = batchctl("--socket " + daemon.socket_path() + " status");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("instance " + status.instance_id()), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("workers (3)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("fashion-mnist-test"), std::string::npos) << run.out;
}

TEST(BatchctlTest, ShmFindsOrphansAndForeignLeftoversWithTheDaemonDown) {
  const pid_t dead = ::fork();
  if (dead == 0) std::_Exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string orphan = "batchd.00000000000bc7e5.3";  // of an instance that is gone: no lock file
  const std::string torch_idle = "torch_" + std::to_string(dead) + "_batchctl_test";
  const std::string torch_busy = "torch_" + std::to_string(::getpid()) + "_batchctl_test";
  // A private shm directory: daemons that other tests start in parallel remove orphans from /dev/shm at start-up.
  const std::string dir = ::testing::TempDir() + "shm-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (const auto& n : {orphan, torch_idle, torch_busy}) std::ofstream(dir + "/" + n) << std::string(1000, 'x');
  const int busy_fd = ::open((dir + "/" + torch_busy).c_str(), O_RDONLY);  // a live process still uses it
  const std::string down = "--socket /tmp/batchd-no-such-dir/batchd.sock shm --shm-dir " + dir;

  auto run = batchctl(down + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  wire::ShmReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &report).ok()) << run.out;
  EXPECT_FALSE(report.daemon_reachable());
  EXPECT_NE(report.daemon_error().find("no batchd is listening"), std::string::npos);
  auto find = [](const auto& files, const std::string& name) {
    for (const auto& f : files) {
      if (f.name() == name) return std::optional<wire::ShmFile>(f);
    }
    return std::optional<wire::ShmFile>();
  };
  auto o = find(report.orphans(), orphan);
  ASSERT_TRUE(o) << run.out;
  EXPECT_EQ(o->instance_id(), "00000000000bc7e5");
  EXPECT_EQ(o->bytes(), 1000u);
  ASSERT_TRUE(find(report.foreign(), torch_idle));
  EXPECT_FALSE(find(report.foreign(), torch_idle)->in_use());
  ASSERT_TRUE(find(report.foreign(), torch_busy));
  EXPECT_TRUE(find(report.foreign(), torch_busy)->in_use());

  run = batchctl(down);  // human form names the orphan and the fix
  EXPECT_NE(run.out.find(orphan), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("batchctl shm --gc"), std::string::npos) << run.out;

  run = batchctl(down + " --gc");
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + orphan));
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + torch_idle)) << "foreign files need --include-foreign";

  run = batchctl(down + " --gc --include-foreign");
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + torch_idle));
  EXPECT_TRUE(std::filesystem::exists(dir + "/" + torch_busy)) << "a file in use is never removed";
  ::close(busy_fd);
  std::filesystem::remove_all(dir);
}

TEST(BatchctlTest, UnreachableDaemonExitsOneWithAHint) {
  auto run = batchctl("--socket /tmp/batchd-no-such-dir/batchd.sock status");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.out.find("no batchd is listening on /tmp/batchd-no-such-dir/batchd.sock"), std::string::npos)
      << run.out;
}

TEST(BatchctlTest, UsageErrorExitsTwo) {
  EXPECT_EQ(batchctl("frobnicate").exit_code, 2);
  EXPECT_EQ(batchctl("").exit_code, 2);
}

}  // namespace
}  // namespace batchd::testing

namespace batchd::testing {
namespace {

wire::StatusReply status_json(const std::string& socket, const std::string& command) {
  auto run = batchctl("--socket " + socket + " " + command + " --json");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  wire::StatusReply st;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &st).ok()) << run.out;
  return st;
}

TEST(BatchctlTest, StatsMeasureDeliveryAheadTimeAndWorkerBusyness) {
  auto daemon = start_daemon("", 2);
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.depth = 2;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  auto a = stream->next();
  auto b = stream->next();  // both slots leased: the daemon is ahead until one is released
  ASSERT_TRUE(a.ok() && *a && b.ok() && *b);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  (*a)->release();  // a state change: the ahead time is accounted
  const auto st = status_json(daemon.socket_path(), "stats");
  ASSERT_EQ(st.streams_size(), 1);
  const auto& s = st.streams(0);
  EXPECT_GE(s.samples_delivered(), 200u) << "announced to the client (the released slot may already be refilled)";
  EXPECT_EQ(s.bytes_delivered(), s.samples_delivered() * (784 * 4 + 8 + 8));
  EXPECT_GE(s.ahead_seconds(), 0.25) << "300 ms with every slot leased";
  EXPECT_LE(s.ahead_seconds(), s.open_seconds());
  double busy = 0;
  for (const auto& w : st.workers()) {
    EXPECT_GT(w.alive_seconds(), 0.0);
    EXPECT_LE(w.busy_seconds(), w.alive_seconds());
    busy += w.busy_seconds();
  }
  EXPECT_GT(busy, 0.0);
  auto human = batchctl("--socket " + daemon.socket_path() + " stats");
  EXPECT_NE(human.out.find("AHEAD%"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("fashion-mnist-test"), std::string::npos) << human.out;
}

TEST(BatchctlTest, DatasetsStreamsAndWorkersViews) {
  auto daemon = start_daemon("", 3);
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(status_json(daemon.socket_path(), "datasets").datasets_size(), 2);
  const auto streams = status_json(daemon.socket_path(), "streams");
  ASSERT_EQ(streams.streams_size(), 1);
  EXPECT_EQ(streams.workers_size(), 0) << "streams --json holds only the streams";
  EXPECT_EQ(status_json(daemon.socket_path(), "workers").workers_size(), 3);
  EXPECT_NE(batchctl("--socket " + daemon.socket_path() + " datasets").out.find("fashion-mnist-test"),
            std::string::npos);
}

TEST(BatchctlTest, DrainRefusesNewStreamsAndShutdownStopsTheDaemon) {
  auto daemon = start_daemon();
  auto client = Client::connect(daemon.socket_path());
  auto running = client->open_stream(fmnist_options());
  ASSERT_TRUE(running.ok());
  auto run = batchctl("--socket " + daemon.socket_path() + " drain");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  auto refused = client->open_stream(fmnist_options());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("draining"), std::string::npos) << refused.error().message();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(running->next().ok()) << "running streams continue";
  EXPECT_TRUE(status_json(daemon.socket_path(), "status").draining());

  run = batchctl("--socket " + daemon.socket_path() + " shutdown");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(eventually([&] { return !Client::connect(daemon.socket_path()).ok(); })) << "the daemon exits";
  Result<std::optional<Batch>> next = std::optional<Batch>();
  for (int i = 0; i < 200 && next.ok(); ++i) next = running->next();
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.error().message().find("shutting down"), std::string::npos) << next.error().message();
  auto status = daemon.stop();
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << (WIFSIGNALED(*status) ? "killed by signal " + std::to_string(WTERMSIG(*status))
                               : "exit status " + std::to_string(WEXITSTATUS(*status)));
}

}  // namespace
}  // namespace batchd::testing
