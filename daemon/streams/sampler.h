// sampler.h — which sample indices a stream reads, epoch by epoch, and how they are cut into batches.
//
// Semantics follow torch.utils.data: DistributedSampler (and RandomSampler/SequentialSampler for world_size 1)
// feeding a BatchSampler:
//   * shuffle: a permutation of [0, n) that depends only on (seed, epoch), the same on every rank and host
//     (Fisher-Yates driven by SplitMix64; the same *semantics* as torch.randperm with a generator seeded by
//     seed + epoch, not the same permutation); otherwise 0, 1, ..., n-1.
//   * sharding: rank r of w takes positions r, r+w, r+2w, ... of the (padded or truncated) list. Without
//     drop_last the list is padded by repeating its head to a multiple of w (so each rank reads ceil(n/w) samples);
//     with drop_last the tail is dropped (floor(n/w) per rank) — exactly DistributedSampler's rules.
//   * batching: consecutive runs of batch_size; the last, shorter batch is dropped when drop_last_batch is set
//     (DataLoader's drop_last, which OpenStream.drop_last sets too unless drop_last_batch is given), otherwise
//     delivered short.
//   * subset (OpenStream.subset): all of the above works over positions 0 .. subset size - 1, and each position is
//     mapped to its dataset index (sample_subset.h), so epoch_indices() are dataset indices either way.
// Thread-compatible value type.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "batchd/result.h"
#include "streams/sample_subset.h"

namespace batchd::daemon {

struct SamplerOptions {
  uint64_t dataset_size = 0;  // the samples to sample from: the subset's size when there is one
  uint32_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  bool drop_last = false;  // DistributedSampler's: the uneven tail across ranks
  std::shared_ptr<const SampleSubset> subset;  // null: the whole dataset (position i is dataset index i)
  bool drop_last_batch = false;  // DataLoader's: the last, shorter batch of each epoch
};

class Sampler final {
 public:
  // Validates the options (dataset_size >= 1 and equal to subset->size() when there is a subset, batch_size >= 1, rank < world_size, at least one batch per epoch).
  static Result<Sampler> make(const SamplerOptions& options);

  uint64_t samples_per_epoch() const { return samples_per_epoch_; }  // this rank's samples in one epoch
  uint64_t batches_per_epoch() const { return batches_per_epoch_; }
  uint32_t batch_size() const { return options_.batch_size; }

  // This rank's sample indices for `epoch`, in order; size() == samples_per_epoch() (before dropping the last
  // incomplete batch).
  std::vector<int64_t> epoch_indices(uint64_t epoch) const;

  // The [begin, end) positions of batch `batch` within epoch_indices(). batch < batches_per_epoch().
  std::pair<uint64_t, uint64_t> batch_range(uint64_t batch) const;

  // The permutation of [0, n) for (seed, epoch); exposed for tests.
  static std::vector<int64_t> permutation(uint64_t n, uint64_t seed, uint64_t epoch);

 private:
  explicit Sampler(const SamplerOptions& options);
  SamplerOptions options_;
  uint64_t samples_per_epoch_ = 0;
  uint64_t batches_per_epoch_ = 0;
};

}  // namespace batchd::daemon
