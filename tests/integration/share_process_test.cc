// Shared streams with subscribers in other processes: one SIGKILLed mid-epoch, one SIGSTOPped past shares.max_lag,
// two SIGSTOPped one after the other.
#include <signal.h>
#include <sys/wait.h>

#include <future>

#include "share_fixture.h"
#include "user_process.h"

namespace batchd::testing {
namespace {

class ShareProcessTest : public SharedDaemonTest {};

// A subscriber in another process: joins, reads `reads` batches (holding the last), says "ready", waits for a byte
// on its `go` pipe, then reads on, saying "batch" per batch or the error that ended it.
struct Subscriber {
  pid_t pid = -1;
  int out = -1;  // what it says
  int go = -1;   // write a byte to let it read on
  ~Subscriber() {
    if (out >= 0) ::close(out);
    if (go >= 0) ::close(go);
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

void start_subscriber(const std::string& socket, const std::string& share, int reads, Subscriber* sub) {
  int out[2], go[2];
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    ::close(go[1]);
    auto c = Client::connect(socket);
    if (!c.ok()) ::_exit(2);
    auto s = c->open_stream(share_options(share));
    if (!s.ok()) ::_exit(3);
    std::optional<Batch> held;
    for (int i = 0; i < reads; ++i) {
      auto b = s->next();
      if (!b.ok() || !*b) ::_exit(4);
      held = std::move(**b);
    }
    UserProcess::send(out[1], "ready\n");
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(5);
    for (;;) {
      auto b = s->next();
      UserProcess::send(out[1], (b.ok() ? std::string("batch") : b.error().message()) + "\n");
      if (!b.ok() || !*b) ::_exit(0);
    }
  }
  ::close(out[1]);
  ::close(go[0]);
  sub->pid = pid;
  sub->out = out[0];
  sub->go = go[1];
}

std::string read_line_from(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

TEST_F(ShareProcessTest, ASubscriberKilledMidEpochLeavesTheOthersRunningAndNothingBehind) {
  auto daemon = start_daemon("file_system");
  Subscriber child;
  start_subscriber(daemon.socket_path(), "killed", 5, &child);
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ(read_line_from(child.out), "ready");
  Reader a, b;
  a.open(daemon.socket_path(), share_options("killed"));
  b.open(daemon.socket_path(), share_options("killed"));
  for (int i = 0; i < 10; ++i) {
    a.step();
    b.step();
  }
  ::kill(child.pid, SIGKILL);
  ::waitpid(child.pid, nullptr, 0);
  child.pid = -1;
  while (a.step() | b.step()) {
  }
  EXPECT_EQ(a.order.size(), 2 * kPerEpoch);
  EXPECT_EQ(b.digests, a.digests);
  expect_every_index_once(a, 0);
  const DaemonStatus st = daemon_status(daemon.socket_path());
  const StreamStatus* share = find_share(st, "killed");
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->subscribers.size(), 2u) << "the killed subscriber was removed";
  a.stream.reset();
  b.stream.reset();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    const DaemonStatus now = daemon_status(daemon.socket_path());
    gone = now.streams.empty() && now.segments.empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "the production ends with its last subscriber";
  EXPECT_TRUE(shm_names_of(st.instance_id).empty()) << "its /dev/shm name was unlinked";
}

TEST_F(ShareProcessTest, AStoppedSubscriberIsDroppedNamingItsLagAndTheOthersFinish) {
  Subscriber child;
  start_subscriber(daemon().socket_path(), "stopped", 2, &child);
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ(read_line_from(child.out), "ready");
  ::kill(child.pid, SIGSTOP);
  ASSERT_EQ(::write(child.go, "g", 1), 1);  // read when it continues
  Reader a;
  a.open(daemon().socket_path(), share_options("stopped"));
  while (a.step()) {  // would stall forever if the production waited for the stopped one
  }
  EXPECT_EQ(a.order.size(), 2 * kPerEpoch);
  expect_every_index_once(a, 0);
  expect_every_index_once(a, 1);
  const DaemonStatus st = daemon_status(daemon().socket_path());
  const StreamStatus* share = find_share(st, "stopped");
  ASSERT_NE(share, nullptr);
  bool failed = false;
  for (const auto& sub : share->subscribers) failed |= sub.client_pid == child.pid && sub.state == "failed";
  EXPECT_TRUE(failed);
  ::kill(child.pid, SIGCONT);
  std::string said;
  for (said = read_line_from(child.out); said == "batch"; said = read_line_from(child.out)) {
  }
  EXPECT_NE(said.find("batches behind"), std::string::npos) << said;
  EXPECT_NE(said.find("shares.max_lag = 8"), std::string::npos) << said;
}

// The state the daemon shows for the subscriber `pid` of share `share` ("" if none).
std::string state_of(const std::string& socket, const std::string& share, pid_t pid) {
  const DaemonStatus st = daemon_status(socket);
  const StreamStatus* production = find_share(st, share);
  if (production == nullptr) return "";
  for (const auto& sub : production->subscribers) {
    if (sub.client_pid == pid) return sub.state + " held " + std::to_string(sub.held);
  }
  return "";
}

// Issue 23, item 2: a subscriber stops (Ctrl-Z) and is failed; later a second one stops. On main the first kept its
// leased slots, the second showed "running, held 4, lag 4" for ever (the slots left could never hold max_lag
// batches for it) and the reader waited for as long as they stayed stopped. Now the first one's leases are revoked
// and the second one is failed in turn: the reader finishes while both are still stopped, and each, continued, gets
// the failure before any batch that was announced to it.
TEST_F(ShareProcessTest, TwoStoppedSubscribersDoNotStallTheOthers) {
  const std::string socket = daemon().socket_path();
  Subscriber first, second;
  start_subscriber(socket, "two-stopped", 2, &first);
  ASSERT_GT(first.pid, 0);
  ASSERT_EQ(read_line_from(first.out), "ready");
  ::kill(first.pid, SIGSTOP);
  ASSERT_EQ(::write(first.go, "g", 1), 1);  // read when it continues
  Reader a;
  a.open(socket, share_options("two-stopped"));
  while (state_of(socket, "two-stopped", first.pid).rfind("failed", 0) != 0 && a.step()) {
  }
  ASSERT_EQ(state_of(socket, "two-stopped", first.pid).rfind("failed", 0), 0u) << "the first one was never dropped";
  start_subscriber(socket, "two-stopped", 2, &second);
  ASSERT_GT(second.pid, 0);
  ASSERT_EQ(read_line_from(second.out), "ready");
  ::kill(second.pid, SIGSTOP);
  ASSERT_EQ(::write(second.go, "g", 1), 1);
  auto reading = std::async(std::launch::async, [&] {
    while (a.step()) {
    }
  });
  const bool finished = reading.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  EXPECT_TRUE(finished) << "the reader waited on the two stopped subscribers";
  if (!finished) {  // let it end: the stopped ones' connections close with them
    for (Subscriber* s : {&first, &second}) {
      ::kill(s->pid, SIGKILL);
      ::waitpid(s->pid, nullptr, 0);
      s->pid = -1;
    }
    reading.wait();
    return;
  }
  EXPECT_EQ(a.order.size(), 2 * kPerEpoch);
  expect_every_index_once(a, 0);
  expect_every_index_once(a, 1);
  for (Subscriber* s : {&first, &second}) {
    EXPECT_EQ(state_of(socket, "two-stopped", s->pid), "failed held 0") << "its slots went back to the production";
    ::kill(s->pid, SIGCONT);
    const std::string said = read_line_from(s->out);  // its first next() since it was stopped
    EXPECT_NE(said.find("batches behind"), std::string::npos) << said;
    EXPECT_NE(said.find("may now be overwritten"), std::string::npos) << said;
  }
}

}  // namespace
}  // namespace batchd::testing
