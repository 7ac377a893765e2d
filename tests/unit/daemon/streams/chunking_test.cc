// chunk_begins(): ceil(W / depth) chunks of consecutive samples, none shorter than min_chunk_us once measured.
#include "streams/chunking.h"

#include <gtest/gtest.h>

namespace batchd::daemon {
namespace {

TEST(ChunkingTest, EnoughChunksForEveryWorkerAtTheStreamsDepth) {
  EXPECT_EQ(chunk_begins(60, 2, {6, 0}, 0), (std::vector<uint32_t>{0, 20, 40}));
  EXPECT_EQ(chunk_begins(256, 4, {15, 0}, 0), (std::vector<uint32_t>{0, 64, 128, 192}));
  EXPECT_EQ(chunk_begins(256, 4, {2, 0}, 0), (std::vector<uint32_t>{0})) << "fewer workers than slots: whole batches";
  EXPECT_EQ(chunk_begins(10, 1, {4, 0}, 0), (std::vector<uint32_t>{0, 2, 5, 7})) << "sizes differ by at most one";
  EXPECT_EQ(chunk_begins(3, 1, {8, 0}, 0), (std::vector<uint32_t>{0, 1, 2})) << "never an empty chunk";
}

TEST(ChunkingTest, NoChunkShorterThanMinChunkUsOfMeasuredWork) {
  // train224-like: 900 µs a sample; 64 samples, W=15, depth 4: 4 chunks of 16 (14 ms each) stay.
  EXPECT_EQ(chunk_begins(64, 4, {15, 200}, 900'000).size(), 4u);
  // fmnist-like: 1 µs a sample; 256 samples = 256 µs: one chunk of at least 200 µs.
  EXPECT_EQ(chunk_begins(256, 4, {15, 200}, 1'000).size(), 1u);
  EXPECT_EQ(chunk_begins(1024, 4, {15, 200}, 1'000).size(), 4u) << "1 ms of work: 4 chunks of 256 µs";
  EXPECT_EQ(chunk_begins(1024, 4, {15, 200}, 0).size(), 4u) << "not measured yet: no cap";
}

}  // namespace
}  // namespace batchd::daemon

namespace batchd::daemon {
namespace {

TEST(ChunkingTest, NoChunkIsEvenOneSampleShortOfTheBound) {
  // 5 samples of 130 µs, min 300 µs: at least 3 samples a chunk (390 µs), so one chunk, not 2 + 3 (260 µs).
  EXPECT_EQ(chunk_begins(5, 1, {4, 300}, 130'000).size(), 1u);
  EXPECT_EQ(chunk_begins(6, 1, {4, 300}, 130'000), (std::vector<uint32_t>{0, 3}));
}

}  // namespace
}  // namespace batchd::daemon
