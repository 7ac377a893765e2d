// One stream uses every worker: its batches are split into chunks that several workers fill at once.
#include <set>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

// A daemon with `workers` workers and --min-chunk-us `min_chunk_us`, and an fmnist stream of batch 60, depth 2.
struct ChunkedStream {
  ChunkedStream(uint32_t workers, const std::string& min_chunk_us)
      : daemon(start_daemon("", workers, {"--min-chunk-us", min_chunk_us})),
        client(std::move(Client::connect(daemon.socket_path()).value())) {
    auto o = fmnist_options();
    o.batch_size = 60;
    o.depth = 2;
    auto s = client.open_stream(o);
    EXPECT_TRUE(s.ok()) << s.error().message();
    stream.emplace(std::move(s).value());
  }
  StreamStatus status() const {
    const auto streams = daemon_status(daemon.socket_path()).streams;
    EXPECT_EQ(streams.size(), 1u);
    return streams.empty() ? StreamStatus{} : streams[0];
  }
  tools::SpawnedDaemon daemon;
  Client client;
  std::optional<Stream> stream;
};

// W = 6, depth 2, batch 60, min_chunk_us = 0: ceil(6 / 2) = 3 chunks of 20 per batch, so the first two batches
// (all the stream may have in flight while its client holds both) are made by all six workers, one chunk each.
TEST(ChunkTest, AllWorkersWritePartOfTheFirstTwoBatches) {
  ChunkedStream sut(6, "0");
  auto first = sut.stream->next();
  auto second = sut.stream->next();
  ASSERT_TRUE(first.ok() && *first && second.ok() && *second);
  std::set<int64_t> indices;
  for (const auto* b : {&**first, &**second}) {
    ASSERT_EQ(b->size(), 60u);
    const Tensor* index = b->find("index");
    for (size_t i = 0; i < b->size(); ++i) indices.insert(index->data_as<int64_t>()[i]);
  }
  EXPECT_EQ(indices.size(), 120u) << "every position of both batches was written, each with its own sample";
  EXPECT_EQ(sut.status().chunks_by_worker, std::vector<uint64_t>(6, 1)) << "each of the 6 workers made one chunk";
}

// With a high min_chunk_us, a cheap pipeline is not cut into chunks shorter than the bound once its time per
// sample is known: fmnist costs about a microsecond a sample, so a 60-sample batch stays one chunk.
TEST(ChunkTest, CheapBatchesAreNotCutBelowMinChunkUs) {
  ChunkedStream sut(6, "100000");
  for (int i = 0; i < 20; ++i) {
    auto b = sut.stream->next();
    ASSERT_TRUE(b.ok() && *b);
  }
  const StreamStatus status = sut.status();
  uint64_t chunks = 0;
  for (uint64_t n : status.chunks_by_worker) chunks += n;
  // The first two batches were split before any time was measured (3 chunks each); every later one is whole.
  const uint64_t batches_made = status.batches_delivered + 2;  // at most depth more in flight or ready
  EXPECT_LE(chunks, batches_made + 4);
  EXPECT_GE(chunks, status.batches_delivered);
}

}  // namespace
}  // namespace batchd::testing
