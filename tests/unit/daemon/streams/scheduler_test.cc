// Scheduler with a fake pool: round-robin fairness across streams, a redo in its stream's turn, removal, a stream
// with its own pool, a routing pool (a round_robin stream's attached workers).
#include "streams/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <vector>

#include "../workers/attached_workers_support.h"
#include "fake_workers.h"
#include "streams/plan.h"
#include "streams/segment_pool.h"

namespace batchd::daemon {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  explicit SchedulerTest(size_t workers = 1) : workers_(workers) {}
  // A stream of 20 batches, served by the shared pool, or by `own` alone (an external dataset's attached workers).
  Stream* add_stream(uint32_t depth, Workers* own = nullptr, uint32_t uid = 0) {
    wire::OpenStream r;
    r.set_dataset("fmnist");
    r.set_pipeline("fmnist_u8");
    r.set_batch_size(500);
    r.set_depth(depth);
    auto p = plan(r, PlanContext{}, datasets_);
    EXPECT_TRUE(p.ok()) << p.error().message();
    auto segment = segments_.create(&*p, ::geteuid());
    EXPECT_TRUE(segment.ok()) << segment.error().message();
    streams_.push_back(std::make_unique<Stream>(Peer{0, 0, uid}, std::move(p).value(), std::move(segment).value()));
    sut_.add(streams_.back().get(), own);
    return streams_.back().get();
  }
  Stream& stream_of(const Task& t) {
    for (auto& s : streams_) {
      if (s->id() == t.stream_id()) return *s;
    }
    throw std::runtime_error("no such stream");
  }
  // Worker `w` finishes its task; the client reads and releases the batch at once.
  uint64_t finish_and_release(size_t w) {
    Task t = workers_.take(w);
    Stream& s = stream_of(t);
    s.on_done(t);
    for (const auto& ready : s.take_deliverable()) EXPECT_TRUE(s.release(ready.sequence()).ok());
    return t.stream_id();
  }

  DatasetRegistry datasets_ = testing::fmnist_registry();
  SegmentPool segments_{std::move(SegmentInstance::claim()).value(), 1ull << 30};
  testing::FakeWorkers workers_;
  Scheduler sut_{workers_};
  std::vector<std::unique_ptr<Stream>> streams_;
};

TEST_F(SchedulerTest, StreamsTakeTurnsWhateverTheirBacklog) {
  const uint64_t a = add_stream(8)->id(), b = add_stream(1)->id(), c = add_stream(4)->id();
  std::vector<uint64_t> served;
  for (int i = 0; i < 9; ++i) {
    sut_.pump();
    ASSERT_TRUE(workers_.busy(0));
    served.push_back(finish_and_release(0));
  }
  EXPECT_EQ(served, (std::vector<uint64_t>{a, b, c, a, b, c, a, b, c}));
}

TEST_F(SchedulerTest, AStreamWithAFreeSlotIsServedNextEvenIfAnotherHasMore) {
  Stream* busy = add_stream(8);
  Stream* one_slot = add_stream(1);
  sut_.pump();  // busy's batch 0
  EXPECT_EQ(finish_and_release(0), busy->id());
  sut_.pump();  // one_slot's batch 0, which its client keeps leased
  Task held = workers_.take(0);
  ASSERT_EQ(held.stream_id(), one_slot->id());
  one_slot->on_done(held);
  auto leased = one_slot->take_deliverable();
  ASSERT_EQ(leased.size(), 1u);
  for (int i = 0; i < 3; ++i) {  // one_slot has no free slot: busy gets every turn
    sut_.pump();
    EXPECT_EQ(finish_and_release(0), busy->id());
  }
  ASSERT_TRUE(one_slot->release(leased[0].sequence()).ok());
  sut_.pump();
  EXPECT_EQ(workers_.task(0).stream_id(), one_slot->id()) << "the freed slot is filled at the next turn";
}

// A redo goes before its own stream's new work, but in that stream's turn: another stream is served in between.
TEST_F(SchedulerTest, ARedoTakesItsStreamsTurnAndRemovedStreamsAreForgotten) {
  Stream* a = add_stream(2);
  Stream* b = add_stream(2);
  sut_.pump();
  Task lost = workers_.take(0);  // a's batch 0: its worker died
  ASSERT_EQ(lost.stream_id(), a->id());
  a->requeue(lost);
  sut_.pump();
  EXPECT_EQ(workers_.task(0).stream_id(), b->id()) << "a was served last: b's turn, redo or not";
  EXPECT_EQ(finish_and_release(0), b->id());
  sut_.pump();
  EXPECT_EQ(workers_.task(0).stream_id(), a->id());
  EXPECT_EQ(workers_.task(0).sequence(), lost.sequence()) << "within a, the redo goes before its batch 1";
  a->requeue(workers_.take(0));
  sut_.remove(a->id());
  EXPECT_EQ(workers_.detached, (std::vector<uint64_t>{a->id()}));
  sut_.pump();
  EXPECT_EQ(workers_.task(0).stream_id(), b->id()) << "a removed stream's redo is never assigned";
}

// A stream whose every task comes back to be redone (a skip stream over a long run of bad samples) gets one turn
// in two next to another stream with work: it never holds the workers.
TEST_F(SchedulerTest, AStreamThatKeepsRedoingGetsOnlyItsTurns) {
  Stream* redoing = add_stream(2);
  const uint64_t other = add_stream(8)->id();
  std::vector<uint64_t> served;
  for (int i = 0; i < 40; ++i) {
    sut_.pump();
    ASSERT_TRUE(workers_.busy(0));
    if (workers_.task(0).stream_id() == redoing->id()) {
      served.push_back(redoing->id());
      redoing->requeue(workers_.take(0));  // failed again
    } else {
      served.push_back(finish_and_release(0));
    }
  }
  const auto twice = std::adjacent_find(served.begin(), served.end());
  EXPECT_EQ(twice, served.end()) << "assignments " << (twice - served.begin()) << " and " << (twice - served.begin() + 1)
                                 << " went to the same stream: the streams alternate";
  EXPECT_EQ(std::count(served.begin(), served.end(), other), 20);
}

// An external dataset's stream has its own pool (its attached workers): only that pool makes its batches, the shared
// pool never does, even idle while the stream waits for a worker; removing it detaches it from its own pool.
TEST_F(SchedulerTest, AStreamWithItsOwnPoolIsServedByThatPoolAlone) {
  testing::FakeWorkers own(2);
  own.set_down(0, true);  // no worker attached yet
  own.set_down(1, true);
  Stream* mine = add_stream(4, &own);
  sut_.pump();
  EXPECT_FALSE(workers_.busy(0)) << "the shared pool's idle worker must not make an external dataset's batch";
  EXPECT_TRUE(own.assigned.empty());
  own.set_down(0, false);
  own.set_down(1, false);
  Stream* other = add_stream(4);
  sut_.pump();
  ASSERT_TRUE(own.busy(0) && own.busy(1)) << "one task per idle worker of its own pool";
  EXPECT_EQ(own.task(0).stream_id(), mine->id());
  EXPECT_EQ(own.task(1).stream_id(), mine->id());
  for (int i = 0; i < 6; ++i) {  // the shared pool serves the other stream alone, whatever mine has left
    ASSERT_TRUE(workers_.busy(0));
    EXPECT_EQ(finish_and_release(0), other->id());
    sut_.pump();
  }
  EXPECT_EQ(finish_and_release(0), other->id());
  EXPECT_EQ(own.assigned.size(), 2u) << "its busy workers got nothing more";
  sut_.remove(mine->id());
  EXPECT_EQ(own.detached, (std::vector<uint64_t>{mine->id()}));
  EXPECT_TRUE(workers_.detached.empty()) << "the shared pool never knew the stream";
}

// Issue 43 (3): a heavy spec's tasks held both workers of the pool, and another user's stream waited ~50 s between
// batches. While two uids have running streams, each holds at most ceil(W / 2) workers, even when the other's
// stream has nothing to make at that moment; alone, a uid takes them all.
class SchedulerShareTest : public SchedulerTest {
 protected:
  SchedulerShareTest() : SchedulerTest(4) {}
  size_t busy() const {
    size_t n = 0;
    for (size_t w = 0; w < 4; ++w) n += workers_.busy(w);
    return n;
  }
};

TEST_F(SchedulerShareTest, WhileTwoUidsStreamEachHoldsAtMostHalfTheWorkers) {
  add_stream(8, nullptr, 1000);
  add_stream(8, nullptr, 1000);  // one user, two streams, 16 batches to make
  sut_.pump();
  EXPECT_EQ(busy(), 4u) << "alone, a uid has every worker";
  for (size_t w = 0; w < 4; ++w) (void)workers_.take(w);
  Stream* other = add_stream(1, nullptr, 2000);  // another user opens a stream
  sut_.pump();  // uid 2000's one task, and uid 1000 back up to its share
  size_t of_1000 = 0, of_2000 = 0;
  for (size_t w = 0; w < 4; ++w) {
    if (!workers_.busy(w)) continue;
    (workers_.task(w).stream_id() == other->id() ? of_2000 : of_1000)++;
  }
  EXPECT_EQ(of_2000, 1u);
  EXPECT_EQ(of_1000, 2u) << "ceil(4 / 2): the fourth worker stays free for the other uid";
  EXPECT_EQ(busy(), 3u);
}

// A routing pool gets every task its stream hands out, each run on the worker its sequence names (s % 2); once the
// stream has failed, nothing it queued runs.
TEST_F(SchedulerTest, ARoutingPoolRunsEachTaskOnItsWorkerAndNothingOnceItsStreamFailed) {
  boost::asio::io_context io;
  testing::RecordingEvents events;
  std::deque<testing::RecordingLink> links(2);
  AttachedWorkers pool(io, 0, 8, TaskTimeouts{}, events, /*route=*/2);
  for (uint32_t w = 0; w < 2; ++w) ASSERT_TRUE(pool.attach(&links[w], 10 + w, 100 + w, w).ok());
  Stream* mine = add_stream(4, &pool);
  pool.set_slot_layout(mine->attach());
  sut_.pump();
  ASSERT_EQ(links[0].tasks.size(), 1u);
  ASSERT_EQ(links[1].tasks.size(), 1u);
  EXPECT_EQ(links[0].tasks[0].sequence(), 0u);
  EXPECT_EQ(links[1].tasks[0].sequence(), 1u);
  EXPECT_GT(pool.queued(), 0u) << "the stream's other claimed batches wait for their workers";
  Task first;
  first.work = links[0].tasks[0];
  const Status done_first = pool.done(10, testing::done_for(first));
  ASSERT_TRUE(done_first.ok()) << done_first.error().message();
  sut_.pump();
  ASSERT_EQ(links[0].tasks.size(), 2u);
  EXPECT_EQ(links[0].tasks[1].sequence(), 2u) << "worker 0's next task, never worker 1's";
  mine->mark_failed();
  Task second;
  second.work = links[0].tasks[1];
  ASSERT_TRUE(pool.done(10, testing::done_for(second)).ok());
  sut_.pump();
  EXPECT_EQ(links[0].tasks.size(), 2u) << "a failed stream runs nothing it queued";
  sut_.remove(mine->id());
  EXPECT_EQ(pool.queued(), 0u);
}

}  // namespace
}  // namespace batchd::daemon
