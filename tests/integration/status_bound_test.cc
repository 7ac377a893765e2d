// Many streams of one non-admin do not break status for the admins (issue 23, item 4): a status reply is a page under
// half of limits.max_frame_bytes and the client gathers the pages; the probes' health request stays small and is
// answered for anyone; streams are capped per uid (limits.max_streams_per_uid); `batchctl shm` does not pass a
// daemon it could not get an answer from for one without segments. A small max_frame_bytes stands for the issue's
// 7,000 streams. The other user is uid 65534 in a forked child (needs root).
#include <google/protobuf/util/json_util.h>

#include <memory>
#include <set>

#include "daemon_fixture.h"
#include "other_user.h"

namespace batchd::testing {
namespace {

constexpr uint32_t kFrameBytes = 8192;

StreamOptions small_stream() {
  auto o = fmnist_options("fashion-mnist-test", 1);
  o.depth = 1;
  return o;
}

// A child process of `who` that opens `n` streams on one connection and holds them until release(); its first line
// is "opened", or what failed.
std::unique_ptr<UserProcess> hold_streams(const std::string& socket, const Credentials& who, int n) {
  return std::make_unique<UserProcess>(who, [socket, n](int out, int in) {
    auto client = Client::connect(socket);
    if (!client.ok()) return UserProcess::send(out, "connect: " + client.error().message() + "\n");
    std::vector<Stream> streams;
    for (int i = 0; i < n; ++i) {
      auto s = client->open_stream(small_stream());
      if (!s.ok()) return UserProcess::send(out, "stream " + std::to_string(i) + ": " + s.error().message() + "\n");
      streams.push_back(std::move(s).value());
    }
    UserProcess::send(out, "opened\n");
    UserProcess::wait_for_release(in);
  });
}

wire::Request request_of(uint64_t id, bool health) {
  wire::Request r;
  r.set_request_id(id);
  if (health) {
    r.mutable_health();
  } else {
    r.mutable_status();
  }
  return r;
}

TEST(StatusBoundTest, ManyStreamsOfANonAdminKeepStatusUnderTheFrameLimitForEveryone) {
  if (!running_as_root()) GTEST_SKIP() << kNeedsRoot;
  auto daemon = start_daemon("", 2, {"--config", write_test_config("status-bound", "[limits]\nmax_frame_bytes = " +
                                                                                       std::to_string(kFrameBytes))});
  open_socket_to_everyone(daemon.socket_path());
  const std::string socket = daemon.socket_path();
  constexpr int kStreams = 64;  // limits.max_streams_per_connection: one connection's worth
  auto holder = hold_streams(socket, {}, kStreams);
  ASSERT_EQ(holder->read_line(), "opened");

  // One reply is one page, under half the frame limit, and says what it leaves out.
  RawConnection raw(socket);
  raw.send_request(request_of(1, false));
  auto page = raw.read_reply();
  ASSERT_TRUE(page && page->has_status()) << "the daemon closed the connection instead of answering";
  EXPECT_LE(page->status().ByteSizeLong(), kFrameBytes / 2);
  EXPECT_GT(page->status().streams_size(), 0);
  EXPECT_EQ(page->status().streams_size() + page->status().streams_omitted(), static_cast<uint32_t>(kStreams));
  EXPECT_GT(page->status().streams_omitted(), 0u);
  EXPECT_EQ(page->status().next_after_stream_id(),
            page->status().streams(page->status().streams_size() - 1).stream_id());

  // The client gathers the pages: every stream once, for root.
  const DaemonStatus all = daemon_status(socket);
  ASSERT_EQ(all.streams.size(), static_cast<size_t>(kStreams));
  ASSERT_EQ(all.segments.size(), static_cast<size_t>(kStreams));
  std::set<uint64_t> ids;
  for (const auto& s : all.segments) {
    ids.insert(s.stream_id);
    EXPECT_EQ(s.owner_uid, kNobody);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kStreams));
  EXPECT_EQ(all.streams_omitted, 0u);

  auto run = batchctl("--socket " + socket + " status");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("streams (64)"), std::string::npos) << run.out;
  run = batchctl("--socket " + socket + " status --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  wire::StatusReply whole;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &whole).ok()) << run.out;
  EXPECT_GT(whole.ByteSizeLong(), kFrameBytes) << "the premise: the whole status would not fit in one frame";
  run = batchctl("--socket " + socket + " shm --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  wire::ShmReport shm;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &shm).ok()) << run.out;
  EXPECT_TRUE(shm.daemon_reachable()) << shm.daemon_error();
  EXPECT_EQ(shm.segments_size(), kStreams);

  // The health request stays small, and the non-admin gets it and its own streams in full too.
  raw.send_request(request_of(2, true));
  auto health = raw.read_reply();
  ASSERT_TRUE(health && health->has_health());
  EXPECT_LT(health->ByteSizeLong(), 200u);
  EXPECT_EQ(health->health().instance_id(), all.instance_id);
  EXPECT_EQ(run_as({},
                   [&]() -> std::string {
                     auto admin = Admin::connect(socket);
                     auto h = admin->health();
                     if (!h.ok()) return "health: " + h.error().message();
                     if (h->daemon_pid != daemon.pid() || h->workers != 2) return "health: wrong daemon or workers";
                     auto mine = admin->status();
                     if (!mine.ok()) return "status: " + mine.error().message();
                     if (mine->admin || mine->streams.size() != kStreams) return "status: not my 64 streams";
                     return "";
                   }),
            "");
  holder->release();
  EXPECT_EQ(holder->finish(), "");
}

TEST(StatusBoundTest, AStatusLargerThanTheFrameLimitWithoutStreamsGetsAnErrorNamingTheKey) {
  // Pages bound the streams, not the datasets: 48 declared datasets with long names at the smallest frame limit are
  // too many for one status. The answer is an Error naming the key, on a connection that stays open.
  std::string extra = "[limits]\nmax_frame_bytes = 4096\n";
  for (int i = 0; i < 48; ++i) {
    extra += "[datasets.fashion-mnist-test-set-copy-number-" + std::to_string(i) +
             "]\nformat = \"idx\"\nimages = \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\"\nlabels = \"" FMNIST_DIR
             "/t10k-labels-idx1-ubyte.gz\"\n";
  }
  auto daemon = start_daemon("", 1, {"--config", write_test_config("many-datasets", extra)});
  RawConnection raw(daemon.socket_path());
  raw.send_request(request_of(1, false));
  auto reply = raw.read_reply();
  ASSERT_TRUE(reply && reply->has_error()) << (reply ? "a status of " + std::to_string(reply->ByteSizeLong()) + " bytes"
                                                     : "the daemon closed the connection without a word");
  EXPECT_EQ(reply->error().code(), wire::RESOURCE_EXHAUSTED);
  EXPECT_NE(reply->error().message().find("limits.max_frame_bytes = 4096"), std::string::npos)
      << reply->error().message();
  raw.send_request(request_of(2, true));
  reply = raw.read_reply();
  EXPECT_TRUE(reply && reply->has_health()) << "the connection stays open";
}

TEST(StatusBoundTest, HealthSaysReadyUntilTheDaemonDrainsAndAliveWhileItDoes) {
  auto daemon = start_daemon();
  const std::string at = "--socket " + daemon.socket_path() + " ";
  auto run = batchctl(at + "health");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("ready: batchd"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("instance " + instance_of(daemon)), std::string::npos) << run.out;
  ASSERT_EQ(batchctl(at + "drain").exit_code, 0);
  run = batchctl(at + "health");
  EXPECT_EQ(run.exit_code, 1) << "draining: not ready for new streams\n" << run.out;
  EXPECT_NE(run.out.find("not ready"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("draining"), std::string::npos) << run.out;
  run = batchctl(at + "health --live");
  EXPECT_EQ(run.exit_code, 0) << "a draining daemon is alive: a liveness probe must not restart it\n" << run.out;
  run = batchctl("--socket /tmp/batchd-no-such-dir/batchd.sock health --live");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("no batchd is listening"), std::string::npos) << run.out;
}

TEST(StatusBoundTest, StreamsOverTheCapPerUidAreRefusedWithTheKey) {
  if (!running_as_root()) GTEST_SKIP() << kNeedsRoot;
  auto daemon =
      start_daemon("", 2, {"--config", write_test_config("uid-streams", "[limits]\nmax_streams_per_uid = 3\n")});
  open_socket_to_everyone(daemon.socket_path());
  const std::string socket = daemon.socket_path();
  // uid 65534: 2 streams on one connection, 1 on another (the cap counts all of a uid's), then one too many.
  UserProcess user({}, [&](int out, int in) {
    auto a = Client::connect(socket), b = Client::connect(socket);
    std::vector<Stream> held;
    for (Client* c : {&*a, &*a, &*b}) {
      auto s = c->open_stream(small_stream());
      if (!s.ok()) return UserProcess::send(out, "within the cap: " + s.error().message() + "\n");
      held.push_back(std::move(s).value());
    }
    auto over = b->open_stream(small_stream());
    if (over.ok()) return UserProcess::send(out, "a 4th stream was opened\n");
    UserProcess::send(out, std::to_string(static_cast<int>(over.error().code())) + " " + over.error().message() + "\n");
    UserProcess::wait_for_release(in);
    held.pop_back();  // closing one makes room
    auto again = b->open_stream(small_stream());
    UserProcess::send(out, again.ok() ? "" : "after a close: " + again.error().message());
  });
  const std::string refusal = user.read_line();
  EXPECT_EQ(refusal.rfind(std::to_string(static_cast<int>(ErrorCode::kResourceExhausted)) + " ", 0), 0u) << refusal;
  EXPECT_NE(refusal.find("limits.max_streams_per_uid = 3"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("uid 65534"), std::string::npos) << refusal;
  // Another uid is not held back by uid 65534's streams.
  auto mine = Client::connect(socket)->open_stream(small_stream());
  EXPECT_TRUE(mine.ok()) << mine.error().message();
  user.release();
  EXPECT_EQ(user.finish(), "");
}

TEST(StatusBoundTest, ShmWhoseDaemonDoesNotAnswerSaysItsSegmentsAreMissingAndFails) {
  auto daemon =
      start_daemon("", 2, {"--config", write_test_config("shm-missing", "[limits]\nmax_connections_per_uid = 1\n")});
  std::unique_ptr<RawConnection> held;
  ASSERT_TRUE(eventually([&] {  // the connection start_daemon() probed with may still be counted for a moment
    held = std::make_unique<RawConnection>(daemon.socket_path());
    (void)held->try_send_request(request_of(1, false));
    auto reply = held->read_reply();
    return reply && reply->has_status();
  }));
  // batchctl's connection is refused (one per uid): the daemon is there, its answer is not.
  auto run = batchctl("--socket " + daemon.socket_path() + " shm");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("MISSING"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("limits.max_connections_per_uid"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("live segments of"), std::string::npos) << "no list of live segments, empty or not\n"
                                                                 << run.out;
  run = batchctl("--socket " + daemon.socket_path() + " shm --json");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  wire::ShmReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &report).ok()) << run.out;
  EXPECT_TRUE(report.segments_missing());
  EXPECT_FALSE(report.daemon_reachable());
}

}  // namespace
}  // namespace batchd::testing
