// batchd/admin.h against a real daemon: status and its parts, the shm report (daemon up and down, --gc), JSON,
// drain and shutdown, connection errors.
#include <google/protobuf/util/json_util.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

TEST(AdminTest, StatusShowsTheDaemonItsWorkersStreamsAndSegments) {
  auto daemon = start_daemon("file_system", 3);
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.on_error = OnError::kSkip;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  auto batch = stream->next();  // one lease held
  ASSERT_TRUE(batch.ok() && *batch);

  auto sut = Admin::connect(daemon.socket_path());
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->socket_path(), daemon.socket_path());
  auto status = sut->status();
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_EQ(status->daemon_pid, daemon.pid());
  EXPECT_EQ(status->instance_id.size(), 16u) << status->instance_id;
  EXPECT_TRUE(std::filesystem::exists("/dev/shm/batchd." + status->instance_id + ".lock"));
  EXPECT_FALSE(status->version.empty());
  EXPECT_GT(status->uptime_seconds, 0.0);
  EXPECT_EQ(status->default_strategy, SharingStrategy::kFileSystem);
  EXPECT_EQ(status->connections, 2u) << "the client's and the admin's";
  EXPECT_EQ(std::set<std::string>(status->datasets.begin(), status->datasets.end()),
            (std::set<std::string>{"fashion-mnist", "fashion-mnist-test"}));
  EXPECT_FALSE(status->draining);
  ASSERT_EQ(status->workers.size(), 3u);
  for (const auto& w : status->workers) {
    EXPECT_GT(w.pid, 0);
    EXPECT_TRUE(w.state == "idle" || w.state == "busy") << w.state;
    EXPECT_LE(w.busy_seconds, w.alive_seconds);
  }

  ASSERT_EQ(status->streams.size(), 1u);
  const StreamStatus& s = status->streams[0];
  EXPECT_EQ(s.stream_id, stream->info().id);
  EXPECT_EQ(s.dataset, "fashion-mnist-test");
  EXPECT_EQ(s.pipeline, "fmnist");
  EXPECT_EQ(s.batch_size, 100u);
  EXPECT_EQ(s.client_pid, ::getpid());
  EXPECT_EQ(s.state, "running");
  EXPECT_EQ(s.on_error, "skip");
  EXPECT_EQ(s.batches_total, stream->info().total_batches);
  EXPECT_GE(s.batches_delivered, 1u);
  EXPECT_EQ(s.bytes_delivered, s.samples_delivered * (784 * 4 + 8 + 8));

  ASSERT_EQ(status->segments.size(), 1u);
  const SegmentStatus& seg = status->segments[0];
  EXPECT_EQ(seg.stream_id, stream->info().id);
  EXPECT_EQ(seg.name, stream->info().segment_name);
  EXPECT_EQ(seg.strategy, SharingStrategy::kFileSystem);
  EXPECT_EQ(seg.bytes, stream->info().segment_bytes);
  EXPECT_EQ(seg.slots, stream->info().depth);
  EXPECT_GE(seg.slots_leased, 1u);
  EXPECT_EQ(seg.slots_free + seg.slots_working + seg.slots_ready + seg.slots_leased, seg.slots);
  EXPECT_EQ(seg.owner_pid, ::getpid());
  EXPECT_EQ(seg.owner_uid, ::getuid());

  // The parts are the same snapshot's fields, one request each.
  auto streams = sut->streams();
  auto workers = sut->workers();
  auto segments = sut->segments();
  ASSERT_TRUE(streams.ok() && workers.ok() && segments.ok());
  ASSERT_EQ(streams->size(), 1u);
  EXPECT_EQ((*streams)[0].stream_id, s.stream_id);
  EXPECT_EQ(workers->size(), 3u);
  ASSERT_EQ(segments->size(), 1u);
  EXPECT_EQ((*segments)[0].name, seg.name);
}

TEST(AdminTest, ShmReportListsLiveSegmentsAndTheirClients) {
  auto daemon = start_daemon("file_system", 1);
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());

  ShmReportOptions options;
  options.socket_path = daemon.socket_path();
  const ShmReport report = shm_report(options);
  EXPECT_TRUE(report.daemon_reachable) << report.daemon_error;
  EXPECT_EQ(report.daemon_pid, daemon.pid());
  ASSERT_EQ(report.segments.size(), 1u);
  EXPECT_EQ(report.segments[0].name, stream->info().segment_name);
  ASSERT_EQ(report.clients.size(), 1u);
  EXPECT_EQ(report.clients[0].pid, ::getpid());
  EXPECT_EQ(report.clients[0].segment_fds, 0) << "the client keeps no fd open: its mapping is enough";
  EXPECT_EQ(report.clients[0].segment_mappings, 1);
  EXPECT_GT(report.shm_total_bytes, 0u);
  EXPECT_LE(report.shm_free_bytes, report.shm_total_bytes);
  EXPECT_EQ(report.instance_id, instance_of(daemon));
  for (const auto& f : report.orphans) EXPECT_NE(f.instance_id, report.instance_id) << "a live segment: " << f.name;
}

TEST(AdminTest, ShmReportWithTheDaemonDownFindsOrphansAndCollectsThem) {
  const pid_t dead = ::fork();
  if (dead == 0) std::_Exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string dir = ::testing::TempDir() + "admin-shm-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  // An instance that is gone: its lock file is there, and nobody holds it.
  const std::string orphan = "batchd.00000000000ad0e5.7", lock = "batchd.00000000000ad0e5.lock";
  const std::string legacy = "batchd." + std::to_string(dead) + ".7";  // named by an older batchd
  const std::string torch = "torch_" + std::to_string(dead) + "_admin_test";
  for (const auto& n : {orphan, lock, legacy, torch}) std::ofstream(dir + "/" + n) << std::string(300, 'x');

  ShmReportOptions options;
  options.socket_path = "/tmp/batchd-no-such-dir/batchd.sock";
  options.shm_dir = dir;
  ShmReport report = shm_report(options);
  EXPECT_FALSE(report.daemon_reachable);
  EXPECT_NE(report.daemon_error.find("no batchd is listening on /tmp/batchd-no-such-dir"), std::string::npos)
      << report.daemon_error;
  ASSERT_EQ(report.orphans.size(), 2u);
  const ShmFile& o = report.orphans[0].name == orphan ? report.orphans[0] : report.orphans[1];
  EXPECT_EQ(o.name, orphan);
  EXPECT_EQ(o.instance_id, "00000000000ad0e5");
  EXPECT_EQ(o.bytes, 300u);
  EXPECT_EQ(o.owner_uid, ::geteuid());
  ASSERT_EQ(report.legacy.size(), 1u);
  EXPECT_EQ(report.legacy[0].name, legacy);
  EXPECT_EQ(report.legacy[0].daemon_pid, dead);
  ASSERT_EQ(report.foreign.size(), 1u);
  EXPECT_EQ(report.foreign[0].name, torch);
  EXPECT_TRUE(report.removed.empty()) << "nothing is removed without gc";

  options.gc = true;
  report = shm_report(options);
  ASSERT_EQ(report.removed.size(), 3u);
  EXPECT_EQ(report.removed.back(), lock) << "a gone instance's lock goes after its segments";
  EXPECT_EQ(std::set<std::string>(report.removed.begin(), report.removed.end()),
            (std::set<std::string>{orphan, lock, legacy}));
  EXPECT_TRUE(report.orphans.empty());
  EXPECT_TRUE(report.legacy.empty());
  EXPECT_FALSE(std::filesystem::exists(dir + "/" + orphan));
  options.include_foreign = true;
  report = shm_report(options);
  EXPECT_EQ(report.removed, std::vector<std::string>{torch});
  EXPECT_TRUE(report.foreign.empty());
  std::filesystem::remove_all(dir);
}

TEST(AdminTest, JsonHasTheProtoFieldNamesAndValues) {
  DaemonStatus status;
  status.daemon_pid = 42;
  status.version = "9.9";
  status.default_strategy = SharingStrategy::kFileDescriptor;
  status.datasets = {"a", "b"};
  status.draining = true;
  StreamStatus& stream = status.streams.emplace_back();
  stream.stream_id = 7;
  stream.dataset = "a";
  stream.stages.decode_nanos = 5;
  stream.stages.samples = 2;
  stream.stall_seconds = 1.5;
  SegmentStatus& segment = status.segments.emplace_back();
  segment.stream_id = 7;
  segment.name = "memfd:batchd.42.7";
  segment.slots = 4;
  segment.owner_uid = 1000;
  auto json = to_json(status);
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->find("\"default_strategy\":\"FILE_DESCRIPTOR\""), std::string::npos) << *json;
  wire::StatusReply parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &parsed).ok()) << *json;
  EXPECT_EQ(parsed.daemon_pid(), 42);
  EXPECT_EQ(parsed.version(), "9.9");
  EXPECT_TRUE(parsed.draining());
  ASSERT_EQ(parsed.datasets_size(), 2);
  ASSERT_EQ(parsed.streams_size(), 1);
  EXPECT_EQ(parsed.streams(0).stream_id(), 7u);
  EXPECT_EQ(parsed.streams(0).stages().decode(), 5u);
  EXPECT_EQ(parsed.streams(0).stages().samples(), 2u);
  EXPECT_EQ(parsed.streams(0).stall_seconds(), 1.5);
  ASSERT_EQ(parsed.segments_size(), 1);
  EXPECT_EQ(parsed.segments(0).name(), "memfd:batchd.42.7");
  EXPECT_EQ(parsed.segments(0).slots(), 4u);
  EXPECT_EQ(parsed.segments(0).owner_uid(), 1000u);
  EXPECT_NE(to_json(DaemonStatus{})->find("\"default_strategy\":\"STRATEGY_DEFAULT\""), std::string::npos);
}

TEST(AdminTest, DrainThenShutdown) {
  auto daemon = start_daemon();
  ::setenv("BATCHD_SOCKET", daemon.socket_path().c_str(), 1);
  auto sut = Admin::connect();  // "" = $BATCHD_SOCKET
  ::unsetenv("BATCHD_SOCKET");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  auto drained = sut->drain();
  ASSERT_TRUE(drained.ok()) << drained.error().message();
  EXPECT_FALSE(drained->empty());
  EXPECT_TRUE(sut->status()->draining);
  auto client = Client::connect(daemon.socket_path());
  EXPECT_FALSE(client->open_stream(fmnist_options()).ok()) << "new streams are refused";

  auto ack = sut->shutdown();
  ASSERT_TRUE(ack.ok()) << ack.error().message();
  auto status = daemon.stop();
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  auto after = sut->status();
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code(), ErrorCode::kUnavailable) << after.error().message();
}

TEST(AdminTest, ConnectWithoutADaemonIsUnavailableWithAHint) {
  auto sut = Admin::connect("/tmp/batchd-no-such-dir/batchd.sock");
  ASSERT_FALSE(sut.ok());
  EXPECT_EQ(sut.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(sut.error().message().find("start it"), std::string::npos) << sut.error().message();
}

}  // namespace
}  // namespace batchd::testing
