// sampler.h — which sample indices a stream reads, epoch by epoch, and how they are cut into batches.
//
// Semantics follow torch.utils.data: DistributedSampler (and RandomSampler/SequentialSampler for world_size 1)
// feeding a BatchSampler:
//   * shuffle: a permutation of [0, n) that depends only on (seed, epoch), the same on every rank and host
//     (a keyed Feistel permutation, index_permutation.h, taken one index at a time; the same *semantics* as
//     torch.randperm with a generator seeded by seed + epoch, not the same permutation); otherwise 0, 1, ..., n-1.
//     No epoch's order is ever built: a batch's indices cost O(batch size) whatever n is.
//   * sharding: rank r of w takes positions r, r+w, r+2w, ... of the (padded or truncated) list. Without
//     drop_last the list is padded by repeating its head to a multiple of w (so each rank reads ceil(n/w) samples);
//     with drop_last the tail is dropped (floor(n/w) per rank) — exactly DistributedSampler's rules.
//   * batching: consecutive runs of batch_size; the last, shorter batch is dropped when drop_last_batch is set
//     (DataLoader's drop_last, which OpenStream.drop_last sets too unless drop_last_batch is given), otherwise
//     delivered short.
//   * subset (OpenStream.subset): all of the above works over positions 0 .. subset size - 1, and each position is
//     mapped to its dataset index (sample_subset.h), so epoch_indices() are dataset indices either way.
//   * repeated augmentation (repeated_aug = K > 1; the torchvision references' RASampler and timm's
//     RepeatAugSampler, from DeiT): each entry of the (shuffled or not) list is repeated K times consecutively
//     ([a, a, a, b, b, b, ...]) before the padding / truncation and sharding above, which then work on n*K entries.
//     The K copies of an index are K consecutive positions, so with world_size >= K they land on K different ranks;
//     every index is read exactly K times per epoch across ranks when n*K divides by world_size (padding repeats
//     the head as above otherwise). copy_at() numbers the copies 0..K-1 so that each draws its own augmentation
//     (workers seed a sample's SampleRng with (seed, epoch, index, copy); copy 0 is the stream without
//     repeated_aug, and a padded duplicate keeps the copy number of the entry it repeats, as without repeated_aug).
//     An epoch is therefore K times as long as without it: the whole repeated list (issue 25's acceptance: "every
//     index K times per epoch across ranks").
//   * selected_samples = M > 0: each rank reads only the first M of its samples each epoch (min(M, its share)),
//     as RASampler / RepeatAugSampler do with their num_selected_samples (floor(n // 256 * 256 / world_size) by
//     default), reading about n/K distinct samples, K times each, per epoch. batchd.Loader sets it only for their
//     objects given as sampler=: a script written for them sizes its epochs, and its schedule, by that length
//     (timm's train script takes its updates per epoch from len(loader)), so the one-word switch keeps it; the
//     repeated_aug keyword alone gives the whole repeated list. The batches are cut from those M samples.
//   * random windows (lm streams, LmSampling RANDOM_WINDOWS; window_sampler.h): none of the above; each batch is
//     batch_size draws with replacement from [0, dataset_size), seeded by (seed, rank, step).
// Any epoch may be asked for (an endless stream, OpenStream.endless, asks for ever more).
// Thread-compatible value type.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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
  std::shared_ptr<const SampleSubset> subset{};  // null: the whole dataset (position i is dataset index i)
  bool drop_last_batch = false;  // DataLoader's: the last, shorter batch of each epoch
  uint32_t repeated_aug = 1;      // K: copies of each index per epoch, 1..kMaxRepeatedAug; 1 = off
  uint64_t selected_samples = 0;  // cap on this rank's samples per epoch (RASampler's num_selected_samples); 0 = none
  // Random windows when > 0: floor((N - 1) / T), the windows an epoch's batches add up to over all ranks
  // (window_sampler.h); dataset_size is then N - T, the offsets drawn from. No subset then.
  uint64_t random_epoch_windows = 0;
};

// The most copies per index repeated_aug allows (the references use 3; DeiT recipes at most 4 or so).
inline constexpr uint32_t kMaxRepeatedAug = 16;

class Sampler final {
 public:
  // Validates the options (dataset_size >= 1 and equal to subset->size() when there is a subset, batch_size >= 1,
  // rank < world_size, 1 <= repeated_aug <= kMaxRepeatedAug, at least one batch per epoch, no subset or repeated_aug
  // with random windows); kInvalidArgument naming the option and its range otherwise.
  static Result<Sampler> make(const SamplerOptions& options);

  uint64_t samples_per_epoch() const { return samples_per_epoch_; }  // this rank's samples in one epoch
  uint64_t batches_per_epoch() const { return batches_per_epoch_; }
  uint32_t batch_size() const { return options_.batch_size; }
  uint32_t repeated_aug() const { return options_.repeated_aug; }

  // This rank's sample indices for `epoch`, in order; size() == samples_per_epoch() (before dropping the last
  // incomplete batch). O(samples_per_epoch()) time and memory: for tests and the remote look-ahead, never per batch.
  std::vector<int64_t> epoch_indices(uint64_t epoch) const;

  // What epoch_indices(epoch) holds at positions [first, first + out.size()), all below samples_per_epoch(), in
  // O(out.size()) time and no other memory. Not for random windows (batch_draws()).
  void indices(uint64_t epoch, uint64_t first, std::span<int64_t> out) const;

  // Which copy (0 .. repeated_aug - 1) of its index position `position` of epoch_indices() is, whatever the epoch:
  // 0 without repeated_aug. position < samples_per_epoch().
  uint32_t copy_at(uint64_t position) const;

  // The [begin, end) positions of batch `batch` within epoch_indices(). batch < batches_per_epoch().
  std::pair<uint64_t, uint64_t> batch_range(uint64_t batch) const;

  // Random windows (window_sampler.h): a batch's indices depend on its step alone, so they are drawn per batch and
  // an epoch's are never held at once. batch_draws() fills `out` (batch_size() of them) with batch `batch` of
  // `epoch`, the same values epoch_indices(epoch) holds there.
  bool random_windows() const { return options_.random_epoch_windows > 0; }
  void batch_draws(uint64_t epoch, uint64_t batch, std::span<int64_t> out) const;

  // The permutation of [0, n) for (seed, epoch), whole; for tests.
  static std::vector<int64_t> permutation(uint64_t n, uint64_t seed, uint64_t epoch);

 private:
  explicit Sampler(const SamplerOptions& options);
  SamplerOptions options_;
  uint64_t entries_ = 0;  // dataset_size * repeated_aug: the repeated list that is padded and sharded
  uint64_t samples_per_epoch_ = 0;
  uint64_t batches_per_epoch_ = 0;
};

}  // namespace batchd::daemon
