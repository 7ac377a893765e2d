// BadSamples: runs of consecutive bad samples kept as one entry, the replacement found in one lookup.
#include "streams/bad_samples.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace batchd::daemon {
namespace {

TEST(BadSamplesTest, ARunMarkedInAnyOrderIsOneEntryAndItsReplacementIsItsEnd) {
  BadSamples sut(30'000);
  std::vector<int64_t> run(20'000);
  std::iota(run.begin(), run.end(), 5'000);  // samples 5,000 .. 24,999
  std::shuffle(run.begin(), run.end(), std::mt19937(7));
  for (int64_t s : run) EXPECT_TRUE(sut.insert(s));
  EXPECT_FALSE(sut.insert(12'345)) << "already bad";
  EXPECT_EQ(sut.size(), 20'000u);
  EXPECT_EQ(sut.runs(), 1u) << "scattered marks join into one run";
  EXPECT_EQ(sut.next_good(5'000), 25'000);
  EXPECT_EQ(sut.next_good(24'999), 25'000);
  EXPECT_EQ(sut.next_good(4'999), 4'999) << "a good sample is its own replacement";
  EXPECT_TRUE(sut.contains(5'000) && sut.contains(24'999));
  EXPECT_FALSE(sut.contains(4'999) || sut.contains(25'000));
}

TEST(BadSamplesTest, SeparateRunsStaySeparateUntilTheGapBetweenThemIsFilled) {
  BadSamples sut(100);
  for (int64_t s : {10, 11, 12, 20, 21}) sut.insert(s);
  EXPECT_EQ(sut.runs(), 2u);
  EXPECT_EQ(sut.next_good(10), 13);
  EXPECT_EQ(sut.next_good(13), 13);
  for (int64_t s : {13, 14, 15, 16, 17, 18}) sut.insert(s);
  EXPECT_EQ(sut.runs(), 2u);
  EXPECT_EQ(sut.next_good(10), 19);
  sut.insert(19);
  EXPECT_EQ(sut.runs(), 1u) << "the last gap filled: one run 10..21";
  EXPECT_EQ(sut.next_good(10), 22);
}

TEST(BadSamplesTest, ARunThatEndsTheDatasetWrapsToTheFirstGoodSample) {
  BadSamples sut(10);
  for (int64_t s : {7, 8, 9}) sut.insert(s);
  EXPECT_EQ(sut.next_good(8), 0);
  for (int64_t s : {0, 1}) sut.insert(s);
  EXPECT_EQ(sut.next_good(7), 2) << "past the end, then past the run at the start";
  EXPECT_EQ(sut.next_good(9), 2);
  EXPECT_EQ(sut.runs(), 2u);
}

}  // namespace
}  // namespace batchd::daemon
