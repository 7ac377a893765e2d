// StreamManager with a fake pool: in-order delivery, exactly-once, a worker lost mid-task, bad samples, close.
#include "streams/stream_manager.h"

#include <gtest/gtest.h>

#include <set>

#include "batchd/wire/convert.h"
#include "fake_workers.h"

namespace batchd::daemon {
namespace {

class StreamManagerTest : public ::testing::Test {
 protected:
  static StreamSettings config() {
    StreamSettings c;
    c.limits.max_shm_bytes = 1ull << 30;
    return c;
  }

  uint64_t open(uint32_t batch_size, uint32_t depth, wire::OnError on_error = wire::ON_ERROR_FAIL) {
    wire::OpenStream r;
    r.set_dataset("fmnist");
    r.set_pipeline("fmnist_u8");
    r.set_batch_size(batch_size);
    r.set_depth(depth);
    r.set_on_error(on_error);
    auto opened = sut_.open(r, Peer{7, 100, 1000}, &sink_);
    EXPECT_TRUE(opened.ok()) << opened.error().message();
    return opened.ok() ? opened->reply.stream_id() : 0;
  }
  // Worker `w` finishes its task successfully.
  Task finish(size_t w) {
    Task t = workers_.take(w);
    sut_.on_task_done(w, testing::done_for(t), t);
    return t;
  }
  std::vector<wire::BatchReady> take_ready() {
    std::vector<wire::BatchReady> out;
    for (const auto& e : sink_.events) {
      if (e.has_batch_ready()) out.push_back(e.batch_ready());
    }
    sink_.events.clear();
    return out;
  }

  StreamSettings config_ = config();
  DatasetRegistry datasets_ = testing::fmnist_registry();
  testing::FakeWorkers workers_{2};
  StreamManager sut_{config_, datasets_, workers_, std::move(SegmentInstance::claim()).value()};
  testing::RecordingSink sink_;
};

TEST_F(StreamManagerTest, DeliversInOrderExactlyOnceAndEndsOnce) {
  const uint64_t id = open(1000, 4);  // 10 batches
  std::multiset<int64_t> seen;
  std::vector<uint64_t> delivered;
  for (int round = 0; round < 20 && delivered.size() < 10; ++round) {
    ASSERT_TRUE(workers_.busy(0) && workers_.busy(1));
    // The later batch finishes first: delivery still goes in order.
    for (size_t w : {size_t{1}, size_t{0}}) {
      for (int64_t i : workers_.task(w).work.indices()) seen.insert(i);
      finish(w);
    }
    for (const auto& ready : take_ready()) {
      delivered.push_back(ready.sequence());
      ASSERT_TRUE(sut_.release(id, ready.sequence(), 7).ok());
    }
  }
  EXPECT_EQ(delivered, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 10000u) << "every index exactly once";
  wire::StatusReply status;
  sut_.fill_status(&status, StatusView::everything());
  ASSERT_EQ(status.streams_size(), 1);
  EXPECT_EQ(status.streams(0).state(), "ended");
  EXPECT_EQ(status.streams(0).samples_delivered(), 10000u);
  EXPECT_EQ(status.workers_size(), 2);
}

TEST_F(StreamManagerTest, AWorkerLostMidTaskHasItsTaskRedoneFirst) {
  open(1000, 4);
  ASSERT_TRUE(workers_.busy(0) && workers_.busy(1));
  workers_.set_down(0, true);
  Task lost = workers_.take(0);
  sut_.on_task_lost(0, lost, {-1, "killed by signal Killed"});
  EXPECT_EQ(sut_.batches_redone(), 1u);
  finish(1);  // worker 1 is free first: it gets the lost task, before any new batch
  ASSERT_TRUE(workers_.busy(1));
  EXPECT_EQ(workers_.task(1).sequence(), lost.sequence());
  EXPECT_EQ(workers_.task(1).work.attempt(), 1u);
  EXPECT_EQ(workers_.task(1).work.indices(0), lost.work.indices(0));
  workers_.set_down(0, false);
  sut_.on_worker_ready(0);  // the replacement runs: it gets new work
  ASSERT_TRUE(workers_.busy(0));
  EXPECT_EQ(workers_.task(0).sequence(), 2u);
}

TEST_F(StreamManagerTest, ABadSampleIsReplacedUnderSkip) {
  const uint64_t skip = open(1000, 2, wire::ON_ERROR_SKIP);
  Task t = workers_.take(0);
  ASSERT_EQ(t.stream_id(), skip);
  const int64_t bad = t.work.indices(3);
  wire::WorkerDone done = testing::done_for(t);
  *done.mutable_error() = wire::to_wire(Error(ErrorCode::kDataError, "corrupt"));
  done.set_sample_failed(true);
  done.set_failed_sample(bad);
  sut_.on_task_done(0, done, t);
  ASSERT_TRUE(workers_.busy(0));
  const Task& redo = workers_.task(0);
  EXPECT_EQ(redo.sequence(), t.sequence());
  EXPECT_EQ(redo.work.indices(3), (bad + 1) % 10000) << "replaced by the next sample in dataset order";
  EXPECT_EQ(redo.work.skipped(), 1u);

}

TEST_F(StreamManagerTest, ABadSampleFailsTheStreamUnderOnErrorFail) {
  const uint64_t fail = open(1000, 2);
  Task f = workers_.take(0);  // batch 0: the stream fails at once
  ASSERT_EQ(f.stream_id(), fail);
  wire::WorkerDone done = testing::done_for(f);
  *done.mutable_error() = wire::to_wire(Error(ErrorCode::kDataError, "corrupt"));
  done.set_sample_failed(true);
  done.set_failed_sample(f.work.indices(0));
  sut_.on_task_done(0, done, f);
  ASSERT_FALSE(sink_.events.empty());
  ASSERT_TRUE(sink_.events.back().has_stream_failed());
  EXPECT_NE(sink_.events.back().stream_failed().error().message().find("on_error=skip"), std::string::npos);
}

TEST_F(StreamManagerTest, DryRunAllocatesNothingAndCloseReturnsEverything) {
  wire::OpenStream r;
  r.set_dataset("fmnist");
  r.set_pipeline("fmnist");
  r.set_batch_size(100);
  r.set_dry_run(true);
  auto dry = sut_.open(r, Peer{7, 1, 1}, &sink_);
  ASSERT_TRUE(dry.ok());
  EXPECT_EQ(dry->reply.stream_id(), 0u);
  EXPECT_EQ(sut_.shm_bytes_in_use(), 0u);
  EXPECT_TRUE(workers_.assigned.empty());

  const uint64_t id = open(100, 2);
  EXPECT_GT(sut_.shm_bytes_in_use(), 0u);
  EXPECT_FALSE(sut_.close(id, 8).ok()) << "another connection cannot close it";
  ASSERT_TRUE(sut_.close(id, 7).ok());
  EXPECT_EQ(sut_.shm_bytes_in_use(), 0u);
  EXPECT_EQ(workers_.detached, (std::vector<uint64_t>{id}));
  EXPECT_EQ(sut_.streams_of(7), 0u);
}

// Depth 1 with 2 workers: every batch is made in 2 chunks at once; a worker lost mid-chunk redoes that chunk only,
// and the batch is delivered once, whole, after its last chunk.
TEST_F(StreamManagerTest, ChunksOfOneBatchAreMadeAtOnceAndALostChunkIsRedoneAlone) {
  const uint64_t id = open(1000, 1);
  ASSERT_TRUE(workers_.busy(0) && workers_.busy(1));
  EXPECT_EQ(workers_.task(0).sequence(), workers_.task(1).sequence()) << "two chunks of the same batch";
  EXPECT_EQ(workers_.task(0).begin(), 0u);
  EXPECT_EQ(workers_.task(1).begin(), 500u);
  EXPECT_EQ(workers_.task(1).work.indices_size(), 500);
  EXPECT_EQ(workers_.task(1).work.batch_samples(), 1000u);
  Task lost = workers_.take(1);
  sut_.on_task_lost(1, lost, {-1, "killed by signal Killed"});  // worker 1's replacement takes the chunk again
  ASSERT_TRUE(workers_.busy(1));
  EXPECT_EQ(workers_.task(1).begin(), 500u);
  EXPECT_EQ(workers_.task(1).work.attempt(), 1u);
  finish(0);
  EXPECT_TRUE(take_ready().empty()) << "half a batch is not delivered";
  finish(1);
  auto ready = take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].num_samples(), 1000u);
  ASSERT_TRUE(sut_.release(id, ready[0].sequence(), 7).ok());
  ASSERT_TRUE(workers_.busy(0) && workers_.busy(1));
  EXPECT_EQ(workers_.task(0).sequence(), 1u);
  wire::StatusReply status;
  sut_.fill_status(&status, StatusView::everything());
  EXPECT_EQ(std::vector<uint64_t>(status.streams(0).chunks_by_worker().begin(),
                                  status.streams(0).chunks_by_worker().end()),
            (std::vector<uint64_t>{1, 1}));
}

}  // namespace
}  // namespace batchd::daemon

namespace batchd::daemon {
namespace {

TEST_F(StreamManagerTest, StatusViewShowsOwnStreamsInFullAndCountsTheOthers) {
  open(100, 2);  // uid 1000's (Peer{7, 100, 1000})
  wire::OpenStream r;
  r.set_dataset("fmnist");
  r.set_pipeline("fmnist_u8");
  r.set_batch_size(100);
  r.set_depth(2);
  auto other = sut_.open(r, Peer{8, 200, 2000}, &sink_);
  ASSERT_TRUE(other.ok()) << other.error().message();

  wire::StatusReply mine;
  sut_.fill_status(&mine, StatusView::own(1000));
  ASSERT_EQ(mine.streams_size(), 1);
  ASSERT_EQ(mine.segments_size(), 1);
  EXPECT_EQ(mine.segments(0).owner_uid(), 1000u);
  EXPECT_EQ(mine.streams_of_others(), 1u);
  EXPECT_EQ(mine.segment_bytes_of_others(), other->reply.segment_bytes());

  wire::StatusReply none;
  sut_.fill_status(&none, StatusView::none());
  EXPECT_EQ(none.streams_size(), 0);
  EXPECT_EQ(none.segments_size(), 0);
  EXPECT_EQ(none.streams_of_others(), 2u);
  EXPECT_EQ(none.workers_size(), 2) << "workers are the daemon's own processes";

  wire::StatusReply all;
  sut_.fill_status(&all, StatusView::everything());
  EXPECT_EQ(all.streams_size(), 2);
  EXPECT_EQ(all.streams_of_others(), 0u);
}

TEST_F(StreamManagerTest, StreamsAndShareSubscriptionsCountAgainstTheCapPerUid) {
  config_.limits.max_streams_per_uid = 2;
  wire::OpenStream r;
  r.set_dataset("fmnist");
  r.set_pipeline("fmnist_u8");
  r.set_batch_size(100);
  r.set_depth(2);
  ASSERT_TRUE(sut_.open(r, Peer{7, 100, 1000}, &sink_).ok());
  wire::OpenStream shared = r;
  shared.set_share("s");
  ASSERT_TRUE(sut_.open(shared, Peer{8, 101, 1000}, &sink_).ok());  // on another connection of the same uid
  EXPECT_EQ(sut_.streams_of_uid(1000), 2u);
  auto joined = sut_.open(shared, Peer{9, 102, 1000}, &sink_);  // a subscription is a stream of its uid
  ASSERT_FALSE(joined.ok());
  EXPECT_EQ(joined.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(joined.error().message().find("uid 1000 already has 2 open streams"), std::string::npos)
      << joined.error().message();
  EXPECT_NE(joined.error().message().find("limits.max_streams_per_uid = 2"), std::string::npos);
  EXPECT_TRUE(sut_.open(r, Peer{10, 103, 2000}, &sink_).ok()) << "another uid has a cap of its own";
  sut_.close_all_of(7);  // the connection of the private stream
  auto again = sut_.open(shared, Peer{9, 102, 1000}, &sink_);
  EXPECT_TRUE(again.ok()) << "a closed stream makes room: " << again.error().message();
}

}  // namespace
}  // namespace batchd::daemon
