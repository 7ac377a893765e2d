// A closed stream holds no worker (issue 43, 3): a task in flight when its stream closes is abandoned, its worker
// ended and replaced at once, so the next user's stream is served without waiting for that task to end. Before, a
// heavy client spec (about 50 s per sample, under the watchdog) held the workers after its stream was closed.
#include <chrono>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

using std::chrono::milliseconds;

TEST(ClosedStreamTest, ATaskInFlightIsAbandonedAndItsWorkerReplacedAtOnce) {
  constexpr int64_t kHang = 5;  // the one worker hangs on sample 5 until the watchdog (60 s) or a close ends it
  auto daemon = start_daemon("", 1, {"--fault-hang-on-sample", std::to_string(kHang)});
  auto client = Client::connect(daemon.socket_path());
  ASSERT_TRUE(client.ok());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.shuffle = false;
  o.depth = 1;
  auto heavy = client->open_stream(o);
  ASSERT_TRUE(heavy.ok()) << heavy.error().message();
  pid_t held = 0;
  for (int i = 0; i < 200 && held == 0; ++i) {  // until its task is on the worker
    const auto st = daemon_status(daemon.socket_path());
    if (!st.workers.empty() && st.workers[0].state == "busy") held = st.workers[0].pid;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_GT(held, 0) << "the worker never took the task";
  ASSERT_TRUE(heavy->close().ok());

  o.start_batch = 1;  // samples 100..199: never the hanging one
  auto next = client->open_stream(o);
  ASSERT_TRUE(next.ok()) << next.error().message();
  const auto started = std::chrono::steady_clock::now();
  const std::string error = within(
      milliseconds(20000), "the next stream's first batch",
      [&] {
        auto batch = next->next();
        return batch.ok() ? std::string(*batch ? "" : "end") : batch.error().message();
      },
      [&] { (void)daemon.stop(); });
  ASSERT_EQ(error, "");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10))
      << "the next stream waited for the closed stream's task";
  const auto st = daemon_status(daemon.socket_path());
  ASSERT_EQ(st.workers.size(), 1u);
  EXPECT_NE(st.workers[0].pid, held) << "the worker that made the closed stream's task was replaced";
  EXPECT_EQ(st.batches_redone, 0u) << "the abandoned task is not redone: its stream is gone";
}

}  // namespace
}  // namespace batchd::testing
