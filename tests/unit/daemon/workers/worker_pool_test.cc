// The worker pool with real forked workers: a reload never waits for a worker (a SIGSTOPped idle one is retired,
// replaced at once and SIGKILLed after its exit grace), and the watchdog kills a worker past its task's deadline,
// blaming only the sample on its progress page; a redo after a bad sample makes only the positions not made yet.
#include "workers/worker_pool.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <boost/asio/signal_set.hpp>
#include <fstream>
#include <thread>

#include "batchd/wire/shared_memory.h"

#include "../streams/fake_workers.h"
#include "streams/plan.h"
#include "streams/segment_instance.h"
#include "streams/segment_pool.h"

namespace batchd::daemon {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

struct Recorder final : WorkerEvents {
  struct Lost {
    size_t w;
    Task task;
    TaskLoss loss;
  };
  void on_task_done(size_t w, const wire::WorkerDone& done, Task task) override { this->done.push_back({w, task}); }
  void on_task_lost(size_t w, Task task, const TaskLoss& loss) override { lost.push_back({w, task, loss}); }
  void on_worker_ready(size_t w) override { ready.push_back(w); }
  std::vector<std::pair<size_t, Task>> done;
  std::vector<Lost> lost;
  std::vector<size_t> ready;
};

char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = all.rfind(')');
  return paren == std::string::npos || paren + 2 >= all.size() ? '?' : all[paren + 2];
}

class WorkerPoolTest : public ::testing::Test {
 protected:
  void start(WorkerPool::Options options) {
    auto pool = WorkerPool::start(io_, options, datasets_);
    ASSERT_TRUE(pool.ok()) << pool.error().message();
    sut_ = std::move(pool).value();
    sut_->serve(events_);
  }
  // Runs the event loop until `done` or `limit`.
  template <typename F>
  bool run_until(F done, milliseconds limit = milliseconds(10000)) {
    const auto end = Clock::now() + limit;
    while (!done() && Clock::now() < end) {
      if (io_.stopped()) io_.restart();
      io_.run_for(milliseconds(5));
    }
    return done();
  }
  // One worker whose tasks get max(300 ms, 1 ms per sample).
  static WorkerPool::Options one_worker_300ms() {
    WorkerPool::Options o;
    o.count = 1;
    o.timeouts = TaskTimeouts{milliseconds(300), milliseconds(1)};
    return o;
  }
  pid_t pid(size_t w) const { return sut_->describe().at(w).pid(); }
  // A stream of fmnist_u8 batches of 10 and one task of it: samples 100..109.
  Task task_of_ten() {
    auto p = plan(testing::fmnist_u8_request(10, 1), PlanContext{}, datasets_);
    EXPECT_TRUE(p.ok());
    auto segment = segments_.create(&*p, ::geteuid());
    EXPECT_TRUE(segment.ok());
    attach_ = p->attach;
    segment_.emplace(std::move(segment).value());
    Task t;
    t.work.set_stream_id(segment_->stream_id());
    t.work.set_batch_samples(10);
    for (int64_t i = 100; i < 110; ++i) t.work.add_indices(i);
    return t;
  }

  DatasetRegistry datasets_ = testing::fmnist_registry();
  boost::asio::io_context io_;
  Recorder events_;
  SegmentPool segments_{std::move(SegmentInstance::claim()).value(), 1 << 30};
  std::optional<Segment> segment_;
  wire::WorkerAttach attach_;
  std::unique_ptr<WorkerPool> sut_;
};

TEST_F(WorkerPoolTest, RestartAllRetiresAStoppedIdleWorkerWithoutWaitingForIt) {
  WorkerPool::Options o;
  o.count = 2;
  o.exit_grace = milliseconds(1500);
  start(o);
  const pid_t stopped = pid(0), other = pid(1);
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  ASSERT_TRUE(run_until([&] { return process_state(stopped) == 'T'; }));
  // Should restart_all wait for the stopped worker, this continues it after 3 s, so the test fails instead of
  // hanging. (The thread only sleeps: the pool's forks meanwhile cannot inherit a lock it holds.)
  std::atomic<bool> returned{false};
  std::thread rescue([&] {
    for (int i = 0; i < 300 && !returned; ++i) std::this_thread::sleep_for(milliseconds(10));
    if (!returned) ::kill(stopped, SIGCONT);
  });
  const auto t0 = Clock::now();
  sut_->restart_all();
  returned = true;
  rescue.join();
  EXPECT_LT(Clock::now() - t0, milliseconds(1000)) << "restart_all waited for a worker";
  EXPECT_EQ(process_state(stopped), 'T') << "the stopped worker is retired, not waited for";
  EXPECT_GT(pid(0), 0);
  EXPECT_NE(pid(0), stopped);
  EXPECT_NE(pid(1), other);
  EXPECT_EQ(sut_->retiring(), 2u);
  // The healthy one exits on EOF; the stopped one is SIGKILLed after the exit grace and reaped.
  ASSERT_TRUE(run_until([&] { return sut_->retiring() == 0; }));
  EXPECT_GE(Clock::now() - t0, o.exit_grace);
  EXPECT_EQ(::kill(stopped, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  // The replacements work.
  const Task t = task_of_ten();
  sut_->assign(0, t, attach_, segment_->fd());
  ASSERT_TRUE(run_until([&] { return !events_.done.empty(); }));
  EXPECT_TRUE(events_.lost.empty());
}

// Background datasets installed one after another restart the workers back to back, so a worker is SIGTERMed
// microseconds after its fork. Before it resets its signal handlers the child still has the daemon's (asio's, which
// writes to the daemon's signal pipe): the daemon would take the worker's SIGTERM for its own and shut down.
TEST_F(WorkerPoolTest, WorkersRetiredRightAfterTheirForkNeverSignalTheDaemon) {
  boost::asio::signal_set daemon_signals(io_, SIGTERM);
  bool daemon_signalled = false;
  daemon_signals.async_wait([&](const boost::system::error_code& ec, int) { daemon_signalled = !ec; });
  WorkerPool::Options o;
  o.count = 2;
  start(o);
  for (int round = 0; round < 40 && !daemon_signalled; ++round) {
    sut_->restart_all();
    sut_->restart_all();
    ASSERT_TRUE(run_until([&] { return sut_->retiring() == 0 || daemon_signalled; }));
  }
  EXPECT_FALSE(daemon_signalled) << "a retired worker's SIGTERM reached the daemon's handler";
  daemon_signals.cancel();
}

TEST_F(WorkerPoolTest, AWorkerPastItsDeadlineIsKilledAndItsTaskLostAsTimedOut) {
  start(one_worker_300ms());
  const pid_t stopped = pid(0);
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  const Task t = task_of_ten();
  const auto assigned = Clock::now();
  sut_->assign(0, t, attach_, segment_->fd());  // never waits, though the worker does not read
  EXPECT_LT(Clock::now() - assigned, milliseconds(250));
  ASSERT_TRUE(run_until([&] { return !events_.lost.empty(); }));
  const auto killed = Clock::now();
  ASSERT_EQ(events_.lost.size(), 1u);
  const auto& lost = events_.lost[0];
  EXPECT_EQ(lost.w, 0u);
  EXPECT_TRUE(lost.loss.timed_out);
  EXPECT_EQ(lost.loss.culprit, -1) << "a stopped worker that never reached a sample blames none";
  EXPECT_NE(lost.loss.cause.find("watchdog"), std::string::npos) << lost.loss.cause;
  EXPECT_GE(killed - assigned, milliseconds(300));
  EXPECT_GE(lost.task.deadline - assigned, milliseconds(300)) << "deadline = assignment + max(min, 1 ms × 10)";
  EXPECT_LE(lost.task.deadline - assigned, milliseconds(300) + (killed - assigned));
  EXPECT_EQ(lost.task.work.indices_size(), 10);
  EXPECT_GT(pid(0), 0);
  EXPECT_NE(pid(0), stopped);
  ASSERT_TRUE(run_until([&] { return sut_->retiring() == 0; }));
  EXPECT_EQ(::kill(stopped, 0), -1) << "SIGKILL ends a stopped process";
  EXPECT_EQ(sut_->describe().at(0).restarts(), 1u);
}

TEST_F(WorkerPoolTest, ATaskDoneInTimeDisarmsTheWatchdog) {
  start(one_worker_300ms());
  const pid_t first = pid(0);
  const Task t = task_of_ten();  // before segment_->fd(): it makes the segment
  sut_->assign(0, t, attach_, segment_->fd());
  ASSERT_TRUE(run_until([&] { return !events_.done.empty(); }));
  run_until([] { return false; }, milliseconds(600));  // past the deadline the task had
  EXPECT_TRUE(events_.lost.empty());
  EXPECT_EQ(pid(0), first);
}

TEST_F(WorkerPoolTest, OnlyTheSampleOnTheProgressPageIsBlamedForATimeout) {
  WorkerPool::Options o = one_worker_300ms();
  o.faults.hang_on_sample = 103;
  start(o);
  const Task t = task_of_ten();  // before segment_->fd(): it makes the segment
  sut_->assign(0, t, attach_, segment_->fd());
  ASSERT_TRUE(run_until([&] { return !events_.lost.empty(); }));
  EXPECT_TRUE(events_.lost[0].loss.timed_out);
  EXPECT_EQ(events_.lost[0].loss.culprit, 103) << "the sample it hung on, not the task's other samples";
}

// A redo after a bad sample (WorkerTask.made = 5): the worker leaves positions 0..4 as they are in the slot (it
// never reaches sample 102, which would crash it), makes 5..9 and writes the index rows of all ten.
TEST_F(WorkerPoolTest, AWorkerMakesOnlyThePositionsNotMadeYetAndWritesEveryIndexRow) {
  WorkerPool::Options o = one_worker_300ms();
  o.faults.crash_on_sample = 102;
  start(o);
  Task t = task_of_ten();  // before segment_->fd(): it makes the segment
  t.work.set_made(5);
  auto mapping = wire::Mapping::map(segment_->fd(), segment_->bytes(), /*writable=*/true, /*populate=*/false);
  ASSERT_TRUE(mapping.ok()) << mapping.error().message();
  char* slot = mapping->data() + attach_.slot_offset();
  const auto& image = attach_.tensors(0);  // uint8 [1, 28, 28] per sample
  const auto& index = attach_.tensors(attach_.tensors_size() - 1);
  std::memset(slot + image.offset(), 0xAB, 10 * image.sample_bytes());  // "made before": must stay
  sut_->assign(0, t, attach_, segment_->fd());
  ASSERT_TRUE(run_until([&] { return !events_.done.empty() || !events_.lost.empty(); }));
  ASSERT_TRUE(events_.lost.empty()) << "the worker made a position made before: " << events_.lost[0].loss.cause;
  const auto* rows = reinterpret_cast<const int64_t*>(slot + index.offset());
  for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(rows[j], 100 + j) << "index row " << j;
  const auto* pixels = reinterpret_cast<const uint8_t*>(slot + image.offset());
  const size_t row = image.sample_bytes();
  for (size_t j = 0; j < 10; ++j) {
    const bool untouched = std::all_of(pixels + j * row, pixels + (j + 1) * row, [](uint8_t v) { return v == 0xAB; });
    EXPECT_EQ(untouched, j < 5) << "image row " << j;
  }
}

}  // namespace
}  // namespace batchd::daemon
