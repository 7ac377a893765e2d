// AttachedWorkers in round robin (ExternalDataset.round_robin): the task of sequence s runs on the worker attached
// as s % workers only, in sequence order, waiting while that worker is busy or not attached; a lost task goes back to
// the front of its worker's queue; a worker number out of range is refused; attaching as a number already attached
// replaces the old attachment.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <vector>

#include "attached_workers_support.h"
#include "workers/attached_workers.h"

namespace batchd::daemon {
namespace {

using testing::done_for;
using testing::kStream;
using testing::RecordingEvents;
using testing::RecordingLink;
using testing::task_of;

class RoundRobinTest : public ::testing::Test {
 protected:
  RoundRobinTest() { sut_.set_slot_layout(testing::slot_layout()); }
  void attach(uint32_t worker, uint64_t connection) {
    auto a = sut_.attach(&links_[connection], connection, 2000 + static_cast<int32_t>(connection), worker);
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->worker, worker);
  }
  void queue(uint64_t sequence) { sut_.queue(task_of(sequence, 0, {static_cast<int64_t>(sequence)})); }
  static std::vector<uint64_t> sequences(const RecordingLink& link) {
    std::vector<uint64_t> out;
    for (const auto& t : link.tasks) out.push_back(t.sequence());
    return out;
  }
  void finish(uint64_t connection) {
    const wire::WorkerTask& last = links_[connection].tasks.back();
    Task t;
    t.work = last;
    ASSERT_TRUE(sut_.done(connection, done_for(t)).ok());
  }

  boost::asio::io_context io_;
  RecordingEvents events_;
  std::deque<RecordingLink> links_{8};
  AttachedWorkers sut_{io_, kStream, /*max_workers=*/8, TaskTimeouts{}, events_, /*route=*/3};
};

TEST_F(RoundRobinTest, EachTaskRunsOnTheWorkerItsSequenceNamesInOrder) {
  ASSERT_TRUE(sut_.routes());
  attach(2, 0);
  attach(0, 1);  // worker 1 is not attached yet
  for (uint64_t s = 0; s < 9; ++s) queue(s);
  sut_.run_queued();
  EXPECT_EQ(sequences(links_[1]), (std::vector<uint64_t>{0}));
  EXPECT_EQ(sequences(links_[0]), (std::vector<uint64_t>{2}));
  EXPECT_EQ(sut_.queued(), 7u);
  finish(1);  // worker 0 is idle again: its next task, never another worker's
  sut_.run_queued();
  EXPECT_EQ(sequences(links_[1]), (std::vector<uint64_t>{0, 3}));
  EXPECT_EQ(sequences(links_[0]), (std::vector<uint64_t>{2}));
  attach(1, 2);
  sut_.run_queued();
  EXPECT_EQ(sequences(links_[2]), (std::vector<uint64_t>{1}));
  for (int round = 0; round < 2; ++round) {
    for (uint64_t c : {0, 1, 2}) finish(c);
    sut_.run_queued();
  }
  EXPECT_EQ(sequences(links_[1]), (std::vector<uint64_t>{0, 3, 6}));
  EXPECT_EQ(sequences(links_[2]), (std::vector<uint64_t>{1, 4, 7}));
  EXPECT_EQ(sequences(links_[0]), (std::vector<uint64_t>{2, 5, 8}));
  EXPECT_EQ(sut_.queued(), 0u);
}

TEST_F(RoundRobinTest, ALostTaskGoesBackBeforeItsWorkersLaterTasksForTheReplacement) {
  attach(1, 0);
  queue(1);
  queue(4);
  sut_.run_queued();
  ASSERT_EQ(sequences(links_[0]), (std::vector<uint64_t>{1}));
  sut_.gone(0);  // worker 1 dies on sequence 1
  ASSERT_EQ(events_.lost.size(), 1u);
  EXPECT_EQ(events_.lost[0].w, 1u);
  sut_.queue(std::move(events_.lost[0].task));  // the stream hands the redo out again
  queue(7);
  sut_.run_queued();  // nobody is worker 1: everything waits
  EXPECT_EQ(sut_.queued(), 3u);
  attach(1, 1);  // the replacement
  sut_.run_queued();
  finish(1);
  sut_.run_queued();
  finish(1);
  sut_.run_queued();
  EXPECT_EQ(sequences(links_[1]), (std::vector<uint64_t>{1, 4, 7}));
}

TEST_F(RoundRobinTest, AWorkerNumberOutOfRangeIsRefused) {
  auto a = sut_.attach(&links_[0], 0, 2000, 3);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(a.error().message().find("0 to workers - 1"), std::string::npos) << a.error().message();
  EXPECT_EQ(sut_.attached(), 0u);
}

TEST_F(RoundRobinTest, AttachingAsANumberAlreadyAttachedReplacesTheOldAttachment) {
  attach(0, 0);
  queue(0);
  queue(3);
  sut_.run_queued();
  attach(0, 1);  // before the daemon saw the old one's connection close
  ASSERT_EQ(links_[0].detaches.size(), 1u);
  EXPECT_TRUE(links_[0].detaches[0].must_exit());
  EXPECT_NE(links_[0].detaches[0].reason().find("replaced"), std::string::npos);
  ASSERT_EQ(events_.lost.size(), 1u);
  EXPECT_EQ(events_.lost[0].task.sequence(), 0u);
  EXPECT_FALSE(sut_.has(0));
  EXPECT_TRUE(sut_.has(1));
  sut_.queue(std::move(events_.lost[0].task));
  sut_.run_queued();
  finish(1);
  sut_.run_queued();
  EXPECT_EQ(sequences(links_[1]), (std::vector<uint64_t>{0, 3}));
}

TEST_F(RoundRobinTest, ClosingTheStreamDropsTheQueues) {
  queue(0);
  queue(1);
  sut_.detach_stream(kStream);
  EXPECT_EQ(sut_.queued(), 0u);
}

}  // namespace
}  // namespace batchd::daemon
