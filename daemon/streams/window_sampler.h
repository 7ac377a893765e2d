// window_sampler.h — the random-window sampler of lm streams (LmSampling RANDOM_WINDOWS): nanoGPT's get_batch,
//   ix = torch.randint(len(data) - block_size, (batch_size,))
// made deterministic and per rank. With N tokens and T = seq_len, sample i is the window at token i, so the samples
// are the N - T offsets [0, N - T - 1] (transforms/ops/token_window.h). Batch `batch` of epoch `epoch` is global
// step s = epoch * batches_per_epoch + batch of the stream, and its batch_size samples are drawn uniformly from [0, N -
// T) with replacement by a generator seeded from (seed, rank, s) alone:
//   * every rank draws its own windows (nanoGPT seeds torch with 1337 + rank);
//   * a run resumed at step s (OpenStream.epoch / start_batch) draws what the first run drew from step s on;
//   * the draws do not depend on how many workers make the batch or how it is cut into chunks (the daemon draws
//     them, the workers only read the windows).
// An epoch is what makes len(loader) and set_epoch meaningful: as many batches as one in-order pass over the file
// shared by the ranks, floor(floor((N - 1) / T) / (batch_size * world_size)), at least 1; every batch is full
// (shuffle and drop_last do not apply).
// The generator: SplitMix64 (splitmix64.h) seeded by mixing seed, rank and step, each draw unbiased (Lemire); the
// same semantics as torch.randint with a per-(rank, step) generator, not the same numbers.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

namespace batchd::daemon {

// Batches per epoch: max(1, floor(epoch_windows / (batch_size * world_size))), epoch_windows = floor((N - 1) / T).
uint64_t random_window_batches(uint64_t epoch_windows, uint32_t batch_size, uint32_t world_size);

// Fills `out` (a batch: batch_size samples) with draws uniform in [0, bound) (bound = N - T >= 1), with replacement,
// determined by (seed, rank, step) alone.
void draw_windows(uint64_t bound, uint64_t seed, uint32_t rank, uint64_t step, std::span<int64_t> out);

}  // namespace batchd::daemon
