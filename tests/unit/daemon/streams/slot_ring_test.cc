// SlotRing with chunks: a slot is ready after its last chunk; stale or repeated finishes are ignored; skipped
// counts add up over the chunks.
#include "streams/slot_ring.h"

#include <gtest/gtest.h>

namespace batchd::daemon {
namespace {

TEST(SlotRingTest, ASlotIsReadyOnlyAfterItsLastChunkAndStaleFinishesAreIgnored) {
  SlotRing sut(2, 10);
  auto a = sut.claim(UINT64_MAX, {0, 20, 40});
  ASSERT_TRUE(a);
  sut.finish(a->sequence, a->slot, 20);
  sut.finish(a->sequence, a->slot, 20);  // the same chunk again: no effect
  sut.finish(a->sequence, a->slot, 7);   // no such chunk
  sut.finish(a->sequence + 1, a->slot, 0);  // another batch
  sut.finish(a->sequence, a->slot, 0);
  EXPECT_TRUE(sut.take_in_order(UINT64_MAX).empty()) << "chunk 40 is still being made";
  EXPECT_EQ(sut.counts()[static_cast<int>(SlotRing::State::kWorking)], 1u);
  sut.finish(a->sequence, a->slot, 40);
  const auto ready = sut.take_in_order(UINT64_MAX);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].sequence, 0u);
}

TEST(SlotRingTest, SkippedCountsAreKeptPerChunkAndAddUp) {
  SlotRing sut(1, 10);
  auto a = sut.claim(UINT64_MAX, {0, 5});
  ASSERT_TRUE(a);
  sut.set_skipped(a->slot, 0, 1);
  sut.set_skipped(a->slot, 5, 3);
  sut.set_skipped(a->slot, 5, 2);  // the chunk was substituted again (a redo): its count is replaced
  sut.finish(0, a->slot, 0);
  sut.finish(0, a->slot, 5);
  const auto ready = sut.take_in_order(UINT64_MAX);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].skipped, 3u);
  EXPECT_FALSE(sut.can_claim(UINT64_MAX)) << "the only slot is leased";
  ASSERT_TRUE(sut.release(0).ok());
  EXPECT_TRUE(sut.can_claim(UINT64_MAX));
  EXPECT_FALSE(sut.can_claim(1)) << "sequence 1 is at the limit";
}

TEST(SlotRingTest, ALeaseWithHoldersIsFreeAfterTheLastRelease) {
  SlotRing sut(1, 3);
  auto a = sut.claim(UINT64_MAX, {0});
  ASSERT_TRUE(a);
  sut.finish(a->sequence, a->slot, 0);
  ASSERT_EQ(sut.take_in_order(UINT64_MAX).size(), 1u);
  sut.set_holders(a->slot, 3);
  ASSERT_TRUE(sut.release(0).ok());
  ASSERT_TRUE(sut.release(0).ok());
  EXPECT_FALSE(sut.can_claim(UINT64_MAX)) << "one holder left";
  ASSERT_TRUE(sut.release(0).ok());
  EXPECT_TRUE(sut.can_claim(UINT64_MAX));
  EXPECT_FALSE(sut.release(0).ok()) << "released more often than held";
  auto b = sut.claim(UINT64_MAX, {0});
  sut.finish(b->sequence, b->slot, 0);
  ASSERT_EQ(sut.take_in_order(UINT64_MAX).size(), 1u);
  sut.set_holders(b->slot, 0);  // nobody reads it
  EXPECT_TRUE(sut.can_claim(UINT64_MAX));
  sut.set_total(1);
  EXPECT_EQ(sut.total(), 2u) << "never below what was claimed";
}

// The lag policy (share_lag_policy.cc) asks for the oldest leased batch, whatever slot it is in.
TEST(SlotRingTest, OldestLeasedIsTheLowestSequenceInALeasedSlot) {
  SlotRing sut(3, 10);
  EXPECT_FALSE(sut.oldest_leased().has_value());
  for (int i = 0; i < 3; ++i) {
    auto c = sut.claim(UINT64_MAX, {0});
    ASSERT_TRUE(c);
    sut.finish(c->sequence, c->slot, 0);
  }
  ASSERT_EQ(sut.take_in_order(UINT64_MAX).size(), 3u);
  EXPECT_EQ(sut.oldest_leased(), 0u);
  ASSERT_TRUE(sut.release(0).ok());
  auto again = sut.claim(UINT64_MAX, {0});  // sequence 3 in slot 0: working, not leased
  ASSERT_TRUE(again);
  EXPECT_EQ(sut.oldest_leased(), 1u);
  ASSERT_TRUE(sut.release(1).ok());
  ASSERT_TRUE(sut.release(2).ok());
  EXPECT_FALSE(sut.oldest_leased().has_value()) << "slot 0 is working on 3";
}

}  // namespace
}  // namespace batchd::daemon

namespace batchd::daemon {
namespace {

// Completion order (ExternalDataset.completion_order, DataLoader's in_order=False): a batch made late holds back
// none after it; each is handed over once, in the order they became ready; next_deliver() is the lowest not yet.
TEST(SlotRingTest, CompletionOrderHandsOverEachBatchOnceAsItBecomesReady) {
  SlotRing sut(3, 10);
  auto a = sut.claim(UINT64_MAX, {0});
  auto b = sut.claim(UINT64_MAX, {0});
  auto c = sut.claim(UINT64_MAX, {0});
  ASSERT_TRUE(a && b && c);
  sut.finish(c->sequence, c->slot, 0);
  sut.finish(b->sequence, b->slot, 0);
  EXPECT_TRUE(sut.take_in_order(UINT64_MAX).empty()) << "in task order, 0 holds back 1 and 2";
  const auto first = sut.take_completed(UINT64_MAX);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].sequence, 2u) << "2 was ready first";
  EXPECT_EQ(first[1].sequence, 1u);
  EXPECT_EQ(sut.next_deliver(), 0u);
  EXPECT_EQ(sut.delivered(), 2u);
  EXPECT_TRUE(sut.take_completed(UINT64_MAX).empty()) << "nothing handed over twice";
  ASSERT_TRUE(sut.release(2).ok());
  auto d = sut.claim(UINT64_MAX, {0});  // the freed slot takes sequence 3
  ASSERT_TRUE(d);
  EXPECT_EQ(d->sequence, 3u);
  sut.finish(d->sequence, d->slot, 0);
  sut.finish(a->sequence, a->slot, 0);
  const auto second = sut.take_completed(/*limit=*/3);
  ASSERT_EQ(second.size(), 1u) << "3 is at the limit (a failing sequence): held";
  EXPECT_EQ(second[0].sequence, 0u);
  EXPECT_EQ(sut.next_deliver(), 3u) << "0, 1 and 2 are all handed over";
  const auto third = sut.take_completed(UINT64_MAX);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].sequence, 3u);
  EXPECT_EQ(sut.next_deliver(), 4u);
  EXPECT_EQ(sut.delivered(), 4u);
}

}  // namespace
}  // namespace batchd::daemon
