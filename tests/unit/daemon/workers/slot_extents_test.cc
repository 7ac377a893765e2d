// SlotExtents: what an attached worker says it wrote (WorkerDone.written) is checked against its task's part of the
// slot: the header, its rows of each tensor; nothing else, no overflow, no empty or missing list, no more ranges
// than the header and one per tensor.
#include "workers/slot_extents.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../streams/fake_workers.h"

namespace batchd::daemon {
namespace {

// Rows [4, 8) of the layout of testing::slot_layout(): image rows at [3392, 6528), index rows at [6688, 6720).
wire::WorkerDone wrote(const std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  wire::WorkerDone done;
  for (const auto& [offset, bytes] : ranges) {
    auto* e = done.add_written();
    e->set_offset(offset);
    e->set_bytes(bytes);
  }
  return done;
}

TEST(SlotExtentsTest, TheHeaderAndTheTasksOwnRowsOfEachTensorAreAccepted) {
  const SlotExtents sut(testing::slot_layout());
  EXPECT_EQ(sut.check(wrote({{0, 48}}), 4, 8), "");
  EXPECT_EQ(sut.check(wrote({{0, 256}, {3392, 4 * 784}, {6656 + 4 * 8, 4 * 8}}), 4, 8), "");
  EXPECT_EQ(sut.check(wrote({{3392, 100}}), 4, 8), "") << "a collated batch's bytes: a prefix of its rows";
  EXPECT_EQ(sut.check(wrote({{256, 8 * 784}}), 0, 8), "") << "a whole-batch task has every row";
}

TEST(SlotExtentsTest, BytesOutsideTheTasksPartOfTheSlotAreRefusedNamingTheRangeAndTheTasksRanges) {
  const SlotExtents sut(testing::slot_layout());
  const std::string other_rows = sut.check(wrote({{0, 48}, {256, 784}}), 4, 8);
  EXPECT_NE(other_rows.find("bytes [256, 256+784) of its slot of 65536 bytes, outside its task's rows [4, 8)"),
            std::string::npos)
      << other_rows;
  EXPECT_NE(other_rows.find("image [3392, 6528)"), std::string::npos) << other_rows;
  EXPECT_NE(sut.check(wrote({{3392, 4 * 784 + 1}}), 4, 8), "") << "one byte past its rows";
  EXPECT_NE(sut.check(wrote({{0, 257}}), 4, 8), "") << "past the header, into rows 0..";
  EXPECT_NE(sut.check(wrote({{65536, 1}}), 0, 8), "") << "past the slot";
  EXPECT_NE(sut.check(wrote({{UINT64_MAX - 7, 16}}), 0, 8), "") << "an offset + bytes that wraps";
  EXPECT_NE(sut.check(wrote({{3392, UINT64_MAX}}), 4, 8), "") << "bytes that wrap";
}

TEST(SlotExtentsTest, AnEmptyListAnEmptyRangeAndTooManyRangesAreRefused) {
  const SlotExtents sut(testing::slot_layout());
  EXPECT_NE(sut.check(wrote({}), 4, 8).find("lists no bytes written"), std::string::npos);
  EXPECT_NE(sut.check(wrote({{3392, 0}}), 4, 8), "");
  std::vector<std::pair<uint64_t, uint64_t>> many(4, {0, 8});
  EXPECT_NE(sut.check(wrote(many), 4, 8).find("lists 4 ranges written, over the 3 its task has"), std::string::npos);
  many.pop_back();
  EXPECT_EQ(sut.check(wrote(many), 4, 8), "") << "the header and one per tensor";
}

}  // namespace
}  // namespace batchd::daemon
