// batchctl against a live daemon: status and shm, human and JSON.
#include <google/protobuf/util/json_util.h>
#include <sys/wait.h>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

struct Run {
  int exit_code;
  std::string out;
};

Run batchctl(const std::string& args) {
  const std::string cmd = std::string(BATCHD_BIN_DIR "/batchctl ") + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  const int status = ::pclose(p);
  return {WEXITSTATUS(status), out};
}

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
  wire::StatusReply shm;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &shm).ok()) << run.out;
  EXPECT_EQ(shm.segments_size(), 1);
  EXPECT_EQ(shm.workers_size(), 0);

  run = batchctl("--socket " + daemon.socket_path() + " shm");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find(stream->info().segment_name), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("leased"), std::string::npos) << run.out;

  run = batchctl("--socket " + daemon.socket_path() + " status");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("workers (3)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("fashion-mnist-test"), std::string::npos) << run.out;
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
