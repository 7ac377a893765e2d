#include "streams/stream.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace batchd::daemon {
namespace {

// A stream of 10 samples in batches of 4 (3 batches/epoch), 2 epochs, 2 slots.
class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override { sut_ = make(0); }

  std::unique_ptr<Stream> make(uint64_t start_batch, wire::OnError on_error = wire::ON_ERROR_FAIL) {
    wire::StreamOpened opened;
    opened.set_slot_count(2);
    opened.set_segment_bytes(4096);
    opened.set_strategy(wire::FILE_DESCRIPTOR);
    opened.set_first_epoch(5);
    opened.set_num_epochs(2);
    opened.set_start_batch(start_batch);
    opened.set_dataset_size(10);
    opened.set_batch_size(4);
    auto sampler = Sampler::make({10, 4, false, 0, 0, 1, false});
    opened.set_batches_per_epoch(sampler->batches_per_epoch());
    wire::WorkerAttach attach;
    attach.set_dataset("d");
    StreamPlan plan{opened, attach, std::move(sampler).value(), on_error, false, false};
    auto segment = pool_.create(&plan, ::geteuid());
    EXPECT_TRUE(segment.ok()) << segment.error().message();
    return std::make_unique<Stream>(Peer{}, std::move(plan), std::move(segment).value());
  }

  SegmentPool pool_{std::move(SegmentInstance::claim()).value(), 1 << 20};
  std::unique_ptr<Stream> sut_;
};

TEST_F(StreamTest, AtMostDepthBatchesAreInFlight) {
  auto a = sut_->next_task();
  auto b = sut_->next_task();
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->work.slot(), b->work.slot());
  EXPECT_FALSE(sut_->next_task()) << "a third batch with only two slots";
}

TEST_F(StreamTest, DeliversInSequenceOrderEvenWhenWorkersFinishOutOfOrder) {
  auto a = sut_->next_task();
  auto b = sut_->next_task();
  sut_->on_done(*b);
  EXPECT_TRUE(sut_->take_deliverable().empty()) << "batch 1 must wait for batch 0";
  sut_->on_done(*a);
  auto ready = sut_->take_deliverable();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].sequence(), 0u);
  EXPECT_EQ(ready[1].sequence(), 1u);
  EXPECT_FALSE(sut_->next_task()) << "both slots are leased";
  ASSERT_TRUE(sut_->release(0).ok());
  auto c = sut_->next_task();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->work.slot(), a->work.slot()) << "the released slot is reused";
  EXPECT_FALSE(sut_->release(0).ok()) << "a double release is refused";
}

TEST_F(StreamTest, WalksEpochsWithShortLastBatchesAndEnds) {
  std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> seen;  // epoch, batch, samples
  std::multiset<int64_t> indices;
  while (!sut_->all_delivered()) {
    auto t = sut_->next_task();
    ASSERT_TRUE(t);
    for (int64_t i : t->work.indices()) indices.insert(i);
    sut_->on_done(*t);
    for (const auto& r : sut_->take_deliverable()) {
      seen.emplace_back(r.epoch(), r.batch(), r.num_samples());
      ASSERT_TRUE(sut_->release(r.sequence()).ok());
    }
  }
  const std::vector<std::tuple<uint64_t, uint64_t, uint32_t>> expected = {
      {5, 0, 4}, {5, 1, 4}, {5, 2, 2}, {6, 0, 4}, {6, 1, 4}, {6, 2, 2}};
  EXPECT_EQ(seen, expected);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(indices.count(i), 2u) << "index " << i << " over two epochs";
  EXPECT_FALSE(sut_->next_task());
}

TEST_F(StreamTest, StartBatchResumesMidEpoch) {
  sut_ = make(2);
  auto t = sut_->next_task();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->work.epoch(), 5u);
  EXPECT_EQ(t->work.batch(), 2u);
  EXPECT_EQ(t->work.indices_size(), 2);
  EXPECT_EQ(t->work.indices(0), 8);
  EXPECT_EQ(sut_->info().batches_total(), 4u);  // 2 epochs * 3 batches - 2 skipped
}

TEST_F(StreamTest, FailedStreamDispatchesAndDeliversNothingMore) {
  auto a = sut_->next_task();
  sut_->mark_failed();
  sut_->on_done(*a);
  EXPECT_TRUE(sut_->take_deliverable().empty());
  EXPECT_FALSE(sut_->next_task());
}

TEST_F(StreamTest, UnblamedDeathsAreRetriedThenFailTheStream) {
  auto t = sut_->next_task();
  auto redo = sut_->after_worker_death(*t, {-1, "killed by signal Killed"});
  ASSERT_TRUE(redo.ok());
  EXPECT_EQ(redo->work.attempt(), 1u);
  redo = sut_->after_worker_death(*redo, {-1, "killed by signal Killed"});
  ASSERT_TRUE(redo.ok());
  auto failed = sut_->after_worker_death(*redo, {-1, "killed by signal Killed"});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message().find("killed 3 workers in a row"), std::string::npos);
}

TEST_F(StreamTest, SampleThatCrashesTwiceFailsTheStreamUnderOnErrorFail) {
  auto t = sut_->next_task();  // indices 0..3
  auto redo = sut_->after_worker_death(*t, {2, "killed by signal Segmentation fault"});
  ASSERT_TRUE(redo.ok()) << "one crash may be bad luck";
  EXPECT_EQ(redo->work.indices(2), 2);
  auto failed = sut_->after_worker_death(*redo, {2, "killed by signal Segmentation fault"});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), ErrorCode::kDataError);
  EXPECT_NE(failed.error().message().find("sample 2 of dataset 'd' crashed 2 workers"), std::string::npos)
      << failed.error().message();
}

TEST_F(StreamTest, SampleThatHangsTwiceFailsTheStreamNamingItUnderOnErrorFail) {
  auto t = sut_->next_task();  // indices 0..3
  const TaskLoss hang{1, "no answer within 2.0 s (watchdog)", true};
  auto redo = sut_->after_worker_death(*t, hang);
  ASSERT_TRUE(redo.ok()) << "one timeout may be a stopped or slow worker";
  EXPECT_EQ(redo->work.attempt(), 0u) << "a blamed timeout counts toward poison, not toward the attempts";
  auto failed = sut_->after_worker_death(*redo, hang);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), ErrorCode::kDataError);
  EXPECT_NE(failed.error().message().find("sample 1 of dataset 'd' hung 2 workers (no answer within 2.0 s"),
            std::string::npos)
      << failed.error().message();
  EXPECT_NE(failed.error().message().find("per_sample_timeout_ms"), std::string::npos) << failed.error().message();
}

TEST_F(StreamTest, ACrashAndATimeoutOnOneSampleMakeItPoisonAndOnlyThatSample) {
  sut_ = make(0, wire::ON_ERROR_SKIP);
  auto t = sut_->next_task();  // indices 0..3
  auto redo = sut_->after_worker_death(*t, {2, "killed by signal Segmentation fault"});
  ASSERT_TRUE(redo.ok());
  redo = sut_->after_worker_death(*redo, {1, "no answer (watchdog)", true});  // another sample: not poison yet
  ASSERT_TRUE(redo.ok());
  EXPECT_EQ(redo->work.skipped(), 0u);
  redo = sut_->after_worker_death(*redo, {2, "no answer (watchdog)", true});
  ASSERT_TRUE(redo.ok());
  EXPECT_EQ(redo->work.indices(2), 3) << "sample 2 (a crash and a timeout) is replaced";
  EXPECT_EQ(redo->work.indices(1), 1) << "sample 1 timed out once: kept";
  EXPECT_EQ(redo->work.skipped(), 1u);
}

TEST_F(StreamTest, SkipReplacesABadSampleNowAndInLaterBatches) {
  sut_ = make(0, wire::ON_ERROR_SKIP);
  auto t = sut_->next_task();
  auto redo = sut_->after_worker_death(*t, {3, "signal"});
  redo = sut_->after_worker_death(*redo, {3, "signal"});
  ASSERT_TRUE(redo.ok());
  EXPECT_EQ(redo->work.indices(3), 4) << "replaced by the next sample in dataset order";
  EXPECT_EQ(redo->work.skipped(), 1u);
  sut_->on_done(*redo);
  auto ready = sut_->take_deliverable();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].skipped(), 1u);
  // The next epoch's batch 0 holds sample 3 again: it is replaced before any worker sees it.
  ASSERT_TRUE(sut_->release(0).ok());
  for (int i = 0; i < 3; ++i) {
    auto next = sut_->next_task();
    ASSERT_TRUE(next);
    sut_->on_done(*next);
    for (const auto& r : sut_->take_deliverable()) ASSERT_TRUE(sut_->release(r.sequence()).ok());
    if (next->work.epoch() == 6 && next->work.batch() == 0) {
      EXPECT_EQ(next->work.indices(3), 4);
      EXPECT_EQ(next->work.skipped(), 1u);
    }
  }
  EXPECT_EQ(sut_->info().samples_skipped(), 2u);
}

// A redo after a bad sample resumes at the position that failed: the worker made the positions before it, which
// keep their indices; a run of bad samples moves the replacement, not the resume point, forward.
TEST_F(StreamTest, ARedoAfterABadSampleResumesAtItAndKeepsWhatWasMade) {
  sut_ = make(0, wire::ON_ERROR_SKIP);
  auto t = sut_->next_task();  // batch 0: samples 0..3
  auto redo = sut_->after_bad_sample(*t, 2, Error(ErrorCode::kDataError, "corrupt"));
  ASSERT_TRUE(redo.ok());
  EXPECT_EQ(redo->work.made(), 2u) << "positions 0 and 1 are in the slot";
  EXPECT_EQ(std::vector<int64_t>(redo->work.indices().begin(), redo->work.indices().end()),
            (std::vector<int64_t>{0, 1, 3, 3}));
  EXPECT_EQ(redo->work.skipped(), 1u);
  redo = sut_->after_bad_sample(*redo, 3, Error(ErrorCode::kDataError, "corrupt"));  // the replacement is bad too
  ASSERT_TRUE(redo.ok());
  EXPECT_EQ(redo->work.made(), 2u);
  EXPECT_EQ(std::vector<int64_t>(redo->work.indices().begin(), redo->work.indices().end()),
            (std::vector<int64_t>{0, 1, 4, 4}));
  EXPECT_EQ(redo->work.skipped(), 2u);
  sut_->requeue(*redo);
  auto next = sut_->next_task();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->sequence(), redo->sequence()) << "the redo goes before the stream's next batch";
  EXPECT_EQ(next->work.made(), 2u);
  EXPECT_EQ(next->work.indices(3), 4);
  // A death after that redoes the same part: the rows made before stay.
  auto again = sut_->after_worker_death(*next, {-1, "killed by signal Killed"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->work.made(), 2u);
}

TEST_F(StreamTest, AFailedBatchFailsTheStreamOnlyAfterEveryEarlierBatchIsDelivered) {
  auto a = sut_->next_task();
  auto b = sut_->next_task();
  sut_->fail_at(b->sequence(), Error(ErrorCode::kDataError, "bad file"));
  EXPECT_FALSE(sut_->due_failure()) << "batch 0 is still being made";
  EXPECT_FALSE(sut_->next_task()) << "nothing after the failing batch is dispatched";
  sut_->on_done(*a);
  auto ready = sut_->take_deliverable();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].sequence(), 0u);
  ASSERT_TRUE(sut_->due_failure());
  EXPECT_EQ(sut_->due_failure()->message(), "bad file");
  ASSERT_TRUE(sut_->release(0).ok());
  EXPECT_FALSE(sut_->next_task());
}

}  // namespace
}  // namespace batchd::daemon
