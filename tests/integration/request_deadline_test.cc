// Every request has a deadline (issue 23, item 10): against a daemon that accepts connections but never answers (a
// real batchd, SIGSTOPped: the kernel still queues connections and requests), connect, status, plan and OpenStream
// fail within the client's request timeout with an error naming the socket and the request, and `batchctl
// --timeout 1 status` exits 1. Waiting for a batch has no deadline, but a request that timed out closes the
// connection, so a thread waiting in next() on it wakes up with that error.
#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

using std::chrono::milliseconds;

// Seconds that f() takes.
template <typename F>
double seconds_of(F f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A daemon with one worker, stopped by stop() and continued (then stopped for good) at the end of the test.
class RequestDeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override { daemon_.emplace(start_daemon("", 1)); }
  void TearDown() override {
    cont();
    ::unsetenv("BATCHD_TIMEOUT");
    daemon_.reset();
  }
  void stop() { ASSERT_EQ(::kill(daemon_->pid(), SIGSTOP), 0); }
  void cont() { ::kill(daemon_->pid(), SIGCONT); }
  const std::string& socket() const { return daemon_->socket_path(); }
  ConnectOptions options(milliseconds timeout) const {
    ConnectOptions o;
    o.socket_path = socket();
    o.request_timeout = timeout;
    return o;
  }
  // Runs body (which returns the error it got, or nullopt) within 20 s, else continues the daemon; checks that it
  // failed after about `timeout` with kUnavailable naming the socket and `request`.
  template <typename F>
  void expect_deadline(const std::string& request, milliseconds timeout, F body) {
    std::optional<Error> error;
    const double took = seconds_of([&] {
      error = within(milliseconds(20000), request + " against a stopped daemon", body, [&] { cont(); });
    });
    ASSERT_TRUE(error) << request << " succeeded against a stopped daemon";
    EXPECT_EQ(error->code(), ErrorCode::kUnavailable) << error->message();
    EXPECT_NE(error->message().find(socket()), std::string::npos) << error->message();
    EXPECT_NE(error->message().find(request), std::string::npos) << error->message();
    EXPECT_NE(error->message().find("BATCHD_TIMEOUT"), std::string::npos) << error->message();
    const double limit = std::chrono::duration<double>(timeout).count();
    EXPECT_GE(took, limit * 0.9) << request;
    EXPECT_LT(took, limit + 4.0) << request << ": the deadline was " << limit << " s";
  }

  std::optional<tools::SpawnedDaemon> daemon_;
};

// A timeout past the steady clock's range is no deadline: it overflowed into the past, and every request failed at
// once ("did not answer ... within 9.3e+09 s").
TEST_F(RequestDeadlineTest, ATimeoutBeyondTheClocksRangeIsNoDeadline) {
  for (const auto timeout : {milliseconds(9'300'000'000'000LL), milliseconds::max()}) {
    auto admin = Admin::connect(options(timeout));
    ASSERT_TRUE(admin.ok()) << admin.error().message();
    auto status = admin->status();
    EXPECT_TRUE(status.ok()) << status.error().message();
  }
}

TEST_F(RequestDeadlineTest, StatusPlanAndOpenStreamFailWithinTheDeadline) {
  stop();
  expect_deadline("StatusRequest", milliseconds(1000), [&]() -> std::optional<Error> {
    auto admin = Admin::connect(options(milliseconds(1000)));
    if (!admin.ok()) return admin.error();
    auto status = admin->status();
    return status.ok() ? std::nullopt : std::optional<Error>(status.error());
  });
  expect_deadline("OpenStream (dry run)", milliseconds(1000), [&]() -> std::optional<Error> {
    auto client = Client::connect(options(milliseconds(1000)));
    if (!client.ok()) return client.error();
    auto plan = client->plan_stream(fmnist_options());
    return plan.ok() ? std::nullopt : std::optional<Error>(plan.error());
  });
  std::optional<Client> client;
  expect_deadline("OpenStream", milliseconds(1500), [&]() -> std::optional<Error> {
    auto c = Client::connect(options(milliseconds(1500)));
    if (!c.ok()) return c.error();
    client.emplace(std::move(c).value());
    auto stream = client->open_stream(fmnist_options());
    return stream.ok() ? std::nullopt : std::optional<Error>(stream.error());
  });
  // The connection is closed: a later request fails at once, with the same reason.
  double took = 0;
  auto again = within(milliseconds(20000), "a request after the deadline", [&] {
    Result<StreamInfo> r = Error(ErrorCode::kInternal, "");
    took = seconds_of([&] { r = client->plan_stream(fmnist_options()); });
    return r;
  }, [&] { cont(); });
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("did not answer OpenStream within 1.5 s"), std::string::npos)
      << again.error().message();
  EXPECT_LT(took, 0.5);
}

TEST_F(RequestDeadlineTest, EnvironmentVariableSetsTheDeadline) {
  stop();
  ::setenv("BATCHD_TIMEOUT", "0.5", 1);
  expect_deadline("StatusRequest", milliseconds(500), [&]() -> std::optional<Error> {
    auto admin = Admin::connect(socket());
    if (!admin.ok()) return admin.error();
    auto status = admin->status();
    return status.ok() ? std::nullopt : std::optional<Error>(status.error());
  });
  ::setenv("BATCHD_TIMEOUT", "soon", 1);
  auto bad = Admin::connect(socket());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("$BATCHD_TIMEOUT = 'soon'"), std::string::npos) << bad.error().message();
}

TEST_F(RequestDeadlineTest, ConnectFailsWithinTheDeadlineWhenTheListenBacklogIsFull) {
  stop();
  // Fill the stopped daemon's listen backlog: a non-blocking connect() then fails with EAGAIN.
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socket().copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  std::vector<wire::UniqueFd> queued;
  for (int i = 0; i < 70000; ++i) {
    wire::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(fd.valid()) << "after " << i << " connections: " << std::strerror(errno);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      ASSERT_EQ(errno, EAGAIN) << std::strerror(errno);
      break;
    }
    queued.push_back(std::move(fd));
  }
  expect_deadline("did not accept the connection", milliseconds(1000), [&]() -> std::optional<Error> {
    auto client = Client::connect(options(milliseconds(1000)));
    return client.ok() ? std::nullopt : std::optional<Error>(client.error());
  });
}

TEST_F(RequestDeadlineTest, ARequestThatTimesOutEndsANextWaitingOnTheSameConnection) {
  auto client = Client::connect(options(milliseconds(1000)));
  ASSERT_TRUE(client.ok()) << client.error().message();
  auto o = fmnist_options();
  o.num_epochs = 1000;  // never ends by itself
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  stop();
  // A reader waits in next() (no deadline) after the batches already sent; another thread's request must still
  // fail by its own deadline, and the reader then wakes with that error.
  auto reader = std::async(std::launch::async, [&] {
    for (;;) {
      auto batch = stream->next();
      if (!batch.ok()) return batch.error();
      if (!*batch) return Error(ErrorCode::kInternal, "the stream ended");
    }
  });
  std::this_thread::sleep_for(milliseconds(200));
  expect_deadline("OpenStream (dry run)", milliseconds(1000), [&]() -> std::optional<Error> {
    auto plan = client->plan_stream(fmnist_options());
    return plan.ok() ? std::nullopt : std::optional<Error>(plan.error());
  });
  if (reader.wait_for(milliseconds(5000)) != std::future_status::ready) {
    ADD_FAILURE() << "next() still waits after the connection was closed";
    cont();
    (void)daemon_->stop();  // ends the connection, so the reader returns
  }
  const Error ended = reader.get();
  EXPECT_NE(ended.message().find("did not answer OpenStream (dry run) within 1 s"), std::string::npos)
      << ended.message();
}

TEST_F(RequestDeadlineTest, BatchctlTimeoutExitsOne) {
  stop();
  testing::Run run{};
  const double took = seconds_of([&] { run = batchctl("--timeout 1 --socket " + socket() + " status"); });
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("the daemon at " + socket() + " accepted the connection but did not answer StatusRequest "
                         "within 1 s"),
            std::string::npos)
      << run.out;
  EXPECT_LT(took, 5.0);
  // The daemon took the connection but did not list its segments: the report says they are MISSING, exit 1.
  run = batchctl("--timeout 1 --socket " + socket() + " shm");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("MISSING"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("did not answer StatusRequest within 1 s"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace batchd::testing
