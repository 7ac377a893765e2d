// AttachedWorkers' recovery: which sample a lost task blames (the claim on the worker's progress page, checked),
// the page itself (a sealed memfd, new for each attachment), and the watchdog (tiny deadlines, a real io_context),
// including a wait that completed in the turn that destroyed its pool.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <cerrno>
#include <chrono>
#include <iterator>
#include <new>
#include <thread>

#include "attached_workers_support.h"
#include "workers/attached_workers.h"

namespace batchd::daemon {
namespace {

using testing::AttachedWorkersTest;
using testing::done_for;
using testing::kStream;
using testing::RecordingEvents;
using testing::RecordingLink;
using testing::task_of;
using testing::WorkerPage;

TEST_F(AttachedWorkersTest, AClosedConnectionLosesTheTaskBlamingOnlyAClaimOfThatTask) {
  struct Case {
    const char* what;
    uint64_t stream_id, sequence;
    uint32_t begin;
    int64_t sample, culprit;
  };
  const Case cases[] = {
      {"its task's sample", kStream, 3, 4, 42, 42},
      {"another stream", kStream + 1, 3, 4, 42, -1},
      {"another sequence", kStream, 2, 4, 42, -1},
      {"another begin", kStream, 3, 0, 42, -1},
      {"a sample outside the task", kStream, 3, 4, 7, -1},
      {"between samples", kStream, 3, 4, -1, -1},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.what);
    RecordingLink& link = links_[i];
    const auto a = attach(&link, 10);
    WorkerPage page(a.progress_fd);
    assign(a.worker);
    page.claim(c.stream_id, c.sequence, c.begin, c.sample);
    sut_.gone(10);
    EXPECT_TRUE(link.detaches.empty()) << "nothing is sent to a connection that closed";
    ASSERT_EQ(events_.lost.size(), i + 1);
    EXPECT_EQ(events_.lost[i].loss.culprit, c.culprit);
    EXPECT_FALSE(events_.lost[i].loss.timed_out);
    EXPECT_NE(events_.lost[i].loss.cause.find("connection closed"), std::string::npos);
    EXPECT_FALSE(sut_.has(10));
  }
  sut_.gone(99);  // not a worker: ignored
  attach(&links_[7], 11);
  sut_.gone(11);  // idle: nothing to redo
  EXPECT_EQ(events_.lost.size(), std::size(cases));
  EXPECT_EQ(sut_.attached(), 0u);
}

// A worker detached in a slot may still run (the daemon cannot kill another uid's process; its Loader does): what it
// writes on its old page is never read as the claim of the worker attached after it.
TEST_F(AttachedWorkersTest, AWorkerAttachedInAReusedSlotHasAPageOfItsOwn) {
  const auto first = attach(&links_[0], 10);
  WorkerPage old_page(first.progress_fd);
  sut_.gone(10);
  const auto second = attach(&links_[1], 11);
  ASSERT_EQ(second.worker, first.worker);
  assign(second.worker);
  old_page.claim(kStream, 3, 4, 42);  // the old worker, on the new worker's task (a redo of its own, say)
  sut_.gone(11);
  ASSERT_EQ(events_.lost.size(), 1u);
  EXPECT_EQ(events_.lost[0].loss.culprit, -1) << "the new worker's page said nothing";
}

TEST_F(AttachedWorkersTest, TheProgressPageIsASealedMemfdOfOnePage) {
  const int fd = attach(&links_[0], 10).progress_fd;
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 4096);
  const int seals = ::fcntl(fd, F_GET_SEALS);
  ASSERT_GE(seals, 0) << "not a memfd that allows sealing: errno " << errno;
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  errno = 0;
  EXPECT_NE(::ftruncate(fd, 0), 0) << "a worker could make the daemon's mapping fault";
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(fd, 1 << 20), 0);
  WorkerPage page(fd);  // read-write for the worker
  page.claim(kStream, 1, 0, 5);
}

TEST(AttachedWorkersWatchdogTest, AWorkerPastItsDeadlineIsToldToExitAndItsTaskIsLostAsTimedOut) {
  boost::asio::io_context io;
  RecordingEvents events;
  RecordingLink slow, quick;
  const TaskTimeouts tiny{std::chrono::milliseconds(30), std::chrono::milliseconds(1)};  // 30 ms a task of 4
  AttachedWorkers sut(io, kStream, 2, tiny, events);
  sut.set_slot_layout(testing::slot_layout());
  const auto s = sut.attach(&slow, 1, 101);
  const auto q = sut.attach(&quick, 2, 102);
  ASSERT_TRUE(s.ok() && q.ok());
  WorkerPage page(s->progress_fd);
  const Task late = task_of(3, 4, {40, 41, 42, 43});
  const Task in_time = task_of(3, 0, {30, 31, 32, 33});
  sut.assign(s->worker, late, wire::WorkerAttach(), -1);
  sut.assign(q->worker, in_time, wire::WorkerAttach(), -1);
  page.claim(kStream, 3, 4, 42);
  ASSERT_TRUE(sut.done(2, done_for(in_time)).ok());  // its watchdog is off
  const auto start = std::chrono::steady_clock::now();
  io.run_for(std::chrono::seconds(5));  // returns once the timers are done
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(25));
  ASSERT_EQ(slow.detaches.size(), 1u);
  EXPECT_TRUE(slow.detaches[0].must_exit());
  EXPECT_NE(slow.detaches[0].reason().find("no answer within"), std::string::npos) << slow.detaches[0].reason();
  EXPECT_NE(slow.detaches[0].reason().find("daemon.task_timeout_min_s"), std::string::npos);
  EXPECT_TRUE(quick.detaches.empty());
  ASSERT_EQ(events.lost.size(), 1u);
  EXPECT_EQ(events.lost[0].w, s->worker);
  EXPECT_EQ(events.lost[0].task.begin(), 4u);
  EXPECT_TRUE(events.lost[0].loss.timed_out);
  EXPECT_EQ(events.lost[0].loss.culprit, 42) << "the sample on its page when the deadline passed";
  EXPECT_FALSE(sut.has(1));
  EXPECT_TRUE(sut.has(2));
  EXPECT_EQ(sut.detached(), 1u);
}

TEST(AttachedWorkersWatchdogTest, AWaitThatCompletedBeforeThePoolWasDestroyedDoesNothing) {
  boost::asio::io_context io;
  RecordingEvents old_events, new_events;
  RecordingLink old_link, new_link;
  const TaskTimeouts tiny{std::chrono::milliseconds(0), std::chrono::milliseconds(1)};
  // The pool lives in storage that a new pool reuses, as the heap would: a stale handler would act on the new one.
  alignas(AttachedWorkers) unsigned char storage[sizeof(AttachedWorkers)];
  auto* pool = new (storage) AttachedWorkers(io, kStream, 2, tiny, old_events);
  ASSERT_TRUE(pool->attach(&old_link, 1, 101).ok());
  pool->assign(0, task_of(3, 0, {30}), wire::WorkerAttach(), -1);  // its deadline: 1 ms from now
  // A socket made readable while its wait is registered: the reactor reports it in the same turn as the due timer
  // and queues its handler first (descriptor completions before timer completions), as a CloseStream read in the
  // turn where a worker's deadline passes.
  boost::asio::local::stream_protocol::socket a(io), b(io);
  boost::asio::local::connect_pair(a, b);
  bool timer_had_not_run = false;
  a.async_wait(boost::asio::socket_base::wait_read, [&](const boost::system::error_code&) {
    timer_had_not_run = old_events.lost.empty();
    pool->~AttachedWorkers();  // the stream is closed
    pool = new (storage) AttachedWorkers(io, kStream + 1, 2, TaskTimeouts{}, new_events);
    (void)pool->attach(&new_link, 2, 102);
    pool->assign(0, task_of(0, 0, {30}), wire::WorkerAttach(), -1);  // worker 0 on its first task, as before
  });
  ASSERT_EQ(::write(b.native_handle(), "x", 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  io.poll();
  EXPECT_TRUE(timer_had_not_run) << "the setup did not make the race: the watchdog ran before the destruction";
  EXPECT_TRUE(new_events.lost.empty()) << "the destroyed pool's watchdog detached the new pool's worker";
  EXPECT_TRUE(new_link.detaches.empty());
  pool->~AttachedWorkers();
}

}  // namespace
}  // namespace batchd::daemon
