// chunking.h — how one batch is split into chunks, so that one stream can keep every worker busy.
//
// A batch of `samples` is cut into k chunks of consecutive samples (sizes differ by at most one), each one task:
//   k = ceil(W / depth)   — with `depth` slots in flight, k chunks per batch give the W workers a task each;
//   capped so that no chunk is shorter than min_chunk_us of work at the stream's measured time per sample (a task
//   costs a round trip to the worker: a chunk must amortize it; fmnist costs ~1 µs a sample, train224 ~900 µs, so
//   the cap is in time, not in samples); before the first measurement there is no cap;
//   at least 1 and at most `samples`.
#pragma once

#include <cstdint>
#include <vector>

namespace batchd::daemon {

struct ChunkPolicy {
  uint32_t workers = 1;       // W: the daemon's worker processes
  uint32_t min_chunk_us = 0;  // daemon.min_chunk_us; 0 = no lower bound
};

// The begin of each chunk (the first is 0), in order. per_sample_ns: the stream's measured worker time per sample
// (0 = not measured yet).
std::vector<uint32_t> chunk_begins(uint32_t samples, uint32_t depth, const ChunkPolicy& policy, double per_sample_ns);

}  // namespace batchd::daemon
