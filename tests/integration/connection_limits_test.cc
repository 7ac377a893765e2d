// What one client may cost the daemon, and how the surplus is turned away: a request frame left incomplete times
// out, connections over a cap (per uid, in total) and past the fd limit get an Error frame instead of a hang, and
// an undeclared enum value in a request is refused naming the field and the value.
#include <sys/resource.h>

#include <filesystem>

#include "batchd/wire/convert.h"
#include "daemon_fixture.h"
#include "other_user.h"

namespace batchd::testing {
namespace {

std::string header(uint32_t n) {
  return {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
}

wire::Request status_request(uint64_t id) {
  wire::Request r;
  r.set_request_id(id);
  r.mutable_status();
  return r;
}

// The reply a raw connection gets to one status request: the status, the daemon's refusal, or nothing (nullopt:
// no reply within the RawConnection's 5 s receive timeout, or end of file).
std::optional<wire::Reply> ask_status(RawConnection& raw) {
  (void)raw.try_send_request(status_request(1));  // a refused connection may be closed already: its reply is read
  return raw.read_reply();
}

// A connection the daemon serves. Retried: the connection start_daemon() probed with may still be counted for a
// moment after it closed.
std::unique_ptr<RawConnection> served_connection(const std::string& socket) {
  std::unique_ptr<RawConnection> raw;
  const bool served = eventually([&] {
    raw = std::make_unique<RawConnection>(socket);
    auto reply = ask_status(*raw);
    return reply && reply->has_status();
  });
  EXPECT_TRUE(served) << "no connection is served";
  return raw;
}

TEST(ConnectionLimitsTest, IncompleteRequestFrameTimesOutWithAnErrorNamingTheKey) {
  auto daemon =
      start_daemon("", 2, {"--config", write_test_config("frame-timeout", "[limits]\nframe_timeout_ms = 300\n")});
  // A whole request sent in two halves within the timeout is served.
  RawConnection slow(daemon.socket_path());
  const std::string frame = *wire::encode_frame(status_request(7));
  slow.send_bytes(frame.substr(0, 3));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  slow.send_bytes(frame.substr(3));
  auto reply = slow.read_reply();
  ASSERT_TRUE(reply && reply->has_status()) << "a frame completed in time is served";

  RawConnection stuck(daemon.socket_path());
  const auto started = std::chrono::steady_clock::now();
  stuck.send_bytes(header(100) + std::string(10, 'x'));
  const auto replies = stuck.read_until_eof();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(replies.size(), 1u) << "an Error, then the daemon closes the connection";
  ASSERT_TRUE(replies[0].has_error());
  EXPECT_EQ(replies[0].error().code(), wire::PROTOCOL);
  EXPECT_NE(replies[0].error().message().find("limits.frame_timeout_ms"), std::string::npos)
      << replies[0].error().message();
  EXPECT_GE(waited, 0.25) << "not before the timeout";
  EXPECT_EQ(daemon_status(daemon.socket_path()).connections, 2u) << "the slow client and this status request";
}

TEST(ConnectionLimitsTest, ConnectionClosedAfterAnErrorIsNotKeptForAClientThatReadsNothing) {
  auto daemon = start_daemon("", 2, {"--config", write_test_config("linger", "[limits]\nframe_timeout_ms = 300\n")});
  RawConnection probe(daemon.socket_path());
  const auto status = ask_status(probe);
  ASSERT_TRUE(status && status->has_status());
  // Replies enough to fill the socket's kernel buffer and leave ~200 KiB queued in the daemon (under its 256 KiB
  // cap, so that it goes on to the bad frame), then a frame that closes the connection; none of it is ever read.
  const size_t requests = (200u << 10) / (status->ByteSizeLong() + 4) + 1;
  std::string burst;
  for (size_t i = 0; i < requests; ++i) burst += *wire::encode_frame(status_request(i + 1));
  wire::Request empty;  // a request without a body: a protocol error
  empty.set_request_id(99);
  RawConnection never_reads(daemon.socket_path());
  never_reads.send_bytes(burst + *wire::encode_frame(empty));
  EXPECT_TRUE(eventually([&] { return daemon_status(daemon.socket_path()).connections == 2; }, std::chrono::seconds(5)))
      << "the connection is gone about frame_timeout_ms after its error, read or not";
}

TEST(ConnectionLimitsTest, RequestFramesAreBoundedByMaxRequestBytes) {
  auto daemon =
      start_daemon("", 2, {"--config", write_test_config("max-request", "[limits]\nmax_request_bytes = 4096\n")});
  RawConnection raw(daemon.socket_path());
  raw.send_bytes(header(4097));
  const auto replies = raw.read_until_eof();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_NE(replies[0].error().message().find("limits.max_request_bytes"), std::string::npos)
      << replies[0].error().message();
  RawConnection fine(daemon.socket_path());
  auto reply = ask_status(fine);  // a status reply is larger than a request, and bounded by max_frame_bytes
  EXPECT_TRUE(reply && reply->has_status());
}

TEST(ConnectionLimitsTest, ConnectionsOverTheCapPerUidAreRefusedWithTheKey) {
  auto daemon =
      start_daemon("", 2, {"--config", write_test_config("uid-cap", "[limits]\nmax_connections_per_uid = 3\n")});
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 3; ++i) held.push_back(served_connection(daemon.socket_path()));
  // The client library reports the daemon's reason (not "broken pipe").
  auto over = Admin::connect(daemon.socket_path());
  ASSERT_TRUE(over.ok());
  auto refused = over->status();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().message().find("limits.max_connections_per_uid"), std::string::npos)
      << refused.error().message();
  // A connection that leaves makes room.
  held.pop_back();
  EXPECT_TRUE(eventually([&] {
    RawConnection again(daemon.socket_path());
    auto reply = ask_status(again);
    return reply && reply->has_status();
  })) << "the cap counts open connections only";
}

TEST(ConnectionLimitsTest, ConnectionsOverTheTotalCapAreRefusedWithTheKey) {
  auto daemon = start_daemon("", 2, {"--config", write_test_config("total-cap", "[limits]\nmax_connections = 2\n")});
  auto a = served_connection(daemon.socket_path());
  auto b = served_connection(daemon.socket_path());
  RawConnection c(daemon.socket_path());
  auto reply = c.read_reply();  // the refusal comes without a request
  ASSERT_TRUE(reply && reply->has_error()) << "refused with an Error frame, not silently";
  EXPECT_EQ(reply->error().code(), wire::RESOURCE_EXHAUSTED);
  EXPECT_NE(reply->error().message().find("limits.max_connections"), std::string::npos) << reply->error().message();
  EXPECT_FALSE(c.read_reply()) << "then closed";
}

size_t open_fds(pid_t pid) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    ++n;
  return n;
}

TEST(ConnectionLimitsTest, ClientPastTheFdLimitGetsAnErrorInsteadOfHanging) {
  auto daemon = start_daemon();
  // Leave the daemon room for 3 more descriptors.
  const rlim_t limit = open_fds(daemon.pid()) + 3;
  const rlimit low{limit, limit};
  ASSERT_EQ(::prlimit(daemon.pid(), RLIMIT_NOFILE, &low, nullptr), 0) << std::strerror(errno);
  std::vector<std::unique_ptr<RawConnection>> held;
  std::optional<wire::Reply> refusal;
  for (int i = 0; i < 10 && !refusal; ++i) {
    held.push_back(std::make_unique<RawConnection>(daemon.socket_path()));
    auto reply = ask_status(*held.back());
    ASSERT_TRUE(reply) << "connection " << i << " hangs: no reply within 5 s (limit " << limit << " fds)";
    if (reply->has_error()) refusal = reply;
  }
  ASSERT_TRUE(refusal) << "10 connections fit in " << limit << " descriptors?";
  EXPECT_EQ(refusal->error().code(), wire::RESOURCE_EXHAUSTED);
  EXPECT_NE(refusal->error().message().find("out of file descriptors (limit " + std::to_string(limit)),
            std::string::npos)
      << refusal->error().message();
  EXPECT_NE(refusal->error().message().find("LimitNOFILE"), std::string::npos);
  // Again (the reserve was taken back), and once a connection leaves, a new one is served.
  RawConnection again(daemon.socket_path());
  auto second = ask_status(again);
  ASSERT_TRUE(second && second->has_error()) << "a second client past the limit is refused too";
  held.clear();
  EXPECT_TRUE(eventually([&] {
    RawConnection fresh(daemon.socket_path());
    auto reply = ask_status(fresh);
    return reply && reply->has_status();
  }));
}

TEST(ConnectionLimitsTest, UndeclaredEnumValuesAreRefusedNamingFieldAndValue) {
  auto daemon = start_daemon();
  RawConnection raw(daemon.socket_path());
  auto open = [&](int strategy, int on_error) {
    wire::Request r;
    r.set_request_id(5);
    auto* o = r.mutable_open_stream();
    o->set_dataset("fashion-mnist-test");
    o->set_pipeline("fmnist");
    o->set_batch_size(100);
    o->set_strategy(static_cast<wire::SharingStrategy>(strategy));
    o->set_on_error(static_cast<wire::OnError>(on_error));
    raw.send_request(r);
    auto reply = raw.read_reply();
    return reply && reply->has_error() ? reply->error() : wire::Error();
  };
  const wire::Error strategy = open(7, 0);
  EXPECT_EQ(strategy.code(), wire::INVALID_ARGUMENT);
  EXPECT_NE(strategy.message().find("open_stream.strategy = 7 is not a value of enum SharingStrategy"),
            std::string::npos)
      << strategy.message();
  EXPECT_NE(strategy.message().find("2 FILE_SYSTEM"), std::string::npos) << strategy.message();
  const wire::Error on_error = open(0, 9);
  EXPECT_NE(on_error.message().find("open_stream.on_error = 9 is not a value of enum OnError"), std::string::npos)
      << on_error.message();
  auto reply = ask_status(raw);
  EXPECT_TRUE(reply && reply->has_status()) << "the connection stays open";
  EXPECT_TRUE(daemon_status(daemon.socket_path()).streams.empty()) << "nothing was opened";
}

}  // namespace
}  // namespace batchd::testing
