// BatchOrder: plain batches by arithmetic, remade runs placed at epoch boundaries, dropped when their owner leaves.
#include "streams/batch_order.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace batchd::daemon {
namespace {

// (epoch, batch, remade) of every sequence.
std::vector<std::tuple<uint64_t, uint64_t, bool>> walk(const BatchOrder& order) {
  std::vector<std::tuple<uint64_t, uint64_t, bool>> out;
  for (uint64_t s = 0; s < order.total(); ++s) {
    const auto item = order.at(s);
    out.emplace_back(item.epoch, item.batch, item.remade);
  }
  return out;
}

TEST(BatchOrderTest, PlainOrderStartsAtStartBatchAndCrossesEpochs) {
  const BatchOrder order(5, 2, 4, 6);  // epochs of 4 batches, from epoch 5 batch 2
  EXPECT_EQ(walk(order), (std::vector<std::tuple<uint64_t, uint64_t, bool>>{
                             {5, 2, false}, {5, 3, false}, {6, 0, false}, {6, 1, false}, {6, 2, false},
                             {6, 3, false}}));
  EXPECT_EQ(order.epoch_begin(6), 2u);
  EXPECT_EQ(order.plain_before(4), 4u);
}

TEST(BatchOrderTest, RemadeBatchesComeAfterTheirEpochAndBeforeTheNext) {
  BatchOrder order(0, 0, 4, 12);
  order.insert_remakes(0, 2, /*owner=*/7);  // joined at batch 2 of epoch 0
  order.insert_remakes(1, 1, /*owner=*/8);  // joined at batch 1 of epoch 1
  EXPECT_EQ(order.total(), 15u);
  EXPECT_EQ(walk(order), (std::vector<std::tuple<uint64_t, uint64_t, bool>>{
                             {0, 0, false}, {0, 1, false}, {0, 2, false}, {0, 3, false}, {0, 0, true},
                             {0, 1, true}, {1, 0, false}, {1, 1, false}, {1, 2, false}, {1, 3, false},
                             {1, 0, true}, {2, 0, false}, {2, 1, false}, {2, 2, false}, {2, 3, false}}));
  EXPECT_EQ(order.at(4).owner, 7u);
  EXPECT_EQ(order.at(10).owner, 8u);
  EXPECT_EQ(order.plain_before(5), 4u) << "inside a run: the plain batches before it";
  EXPECT_EQ(order.plain_before(7), 5u);
}

TEST(BatchOrderTest, DroppingARunKeepsWhatWasClaimedAndRenumbersTheRest) {
  BatchOrder order(0, 0, 4, 8);
  order.insert_remakes(0, 3, 7);
  order.insert_remakes(0, 1, 9);  // after 7's run
  EXPECT_EQ(order.at(7).owner, 9u);
  EXPECT_EQ(order.drop_remakes(7, /*claimed=*/5), 2u) << "sequence 4 was claimed: kept";
  EXPECT_EQ(walk(order), (std::vector<std::tuple<uint64_t, uint64_t, bool>>{
                             {0, 0, false}, {0, 1, false}, {0, 2, false}, {0, 3, false}, {0, 0, true},
                             {0, 0, true}, {1, 0, false}, {1, 1, false}, {1, 2, false}, {1, 3, false}}));
  EXPECT_EQ(order.at(5).owner, 9u);
  EXPECT_EQ(order.drop_remakes(9, 5), 1u);
  EXPECT_EQ(order.total(), 9u);
}

TEST(BatchOrderTest, ThePlainTotalGrowsAndShrinks) {
  BatchOrder order(0, 0, 4, 4);
  order.set_plain_total(10);
  EXPECT_EQ(order.total(), 10u);
  EXPECT_EQ(order.at(9).epoch, 2u);
  order.set_plain_total(6);
  EXPECT_EQ(order.total(), 6u);
}

}  // namespace
}  // namespace batchd::daemon
