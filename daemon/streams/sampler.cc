#include "streams/sampler.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "streams/index_permutation.h"
#include "streams/window_sampler.h"

namespace batchd::daemon {

Sampler::Sampler(const SamplerOptions& options) : options_(options) {
  if (options.random_epoch_windows > 0) {  // every batch full
    batches_per_epoch_ = random_window_batches(options.random_epoch_windows, options.batch_size, options.world_size);
    samples_per_epoch_ = batches_per_epoch_ * options.batch_size;
    entries_ = options.dataset_size;
    return;
  }
  // The list that is padded and sharded: n entries, or n * K with repeated augmentation (RASampler's
  // num_samples = ceil(n * K / w) is DistributedSampler's rule applied to it). make() bounds n and K first.
  const uint64_t m = options.dataset_size * options.repeated_aug, w = options.world_size;
  entries_ = m;
  // DistributedSampler: num_samples = ceil((m - w) / w) if drop_last and m % w != 0, else ceil(m / w).
  if (options.drop_last && m % w != 0) {
    samples_per_epoch_ = m >= w ? (m - w + w - 1) / w : 0;
  } else {
    samples_per_epoch_ = (m + w - 1) / w;
  }
  // RASampler / RepeatAugSampler: iter(indices[:num_selected_samples]).
  if (options.selected_samples != 0) samples_per_epoch_ = std::min(samples_per_epoch_, options.selected_samples);
  const uint64_t b = options.batch_size;
  batches_per_epoch_ = options.drop_last_batch ? samples_per_epoch_ / b : (samples_per_epoch_ + b - 1) / b;
}

Result<Sampler> Sampler::make(const SamplerOptions& options) {
  if (options.dataset_size == 0) return Error(ErrorCode::kInvalidArgument, "the dataset has no samples");
  if (options.subset && options.subset->size() != options.dataset_size) {
    return Error(ErrorCode::kInternal, "the sampler's size is not its subset's");
  }
  if (options.random_epoch_windows > 0 &&
      (options.subset || options.repeated_aug > 1 || options.selected_samples > 0)) {  // plan_pipeline refuses them
    return Error(ErrorCode::kInternal, "random windows are drawn from the whole token file, never from a subset "
                                       "nor with repeated augmentation");
  }
  if (options.batch_size == 0) return Error(ErrorCode::kInvalidArgument, "batch_size must be at least 1");
  if (options.world_size == 0) return Error(ErrorCode::kInvalidArgument, "world_size must be at least 1");
  if (options.rank >= options.world_size) {
    return Error(ErrorCode::kInvalidArgument, "rank " + std::to_string(options.rank) +
                                                  " is out of range for world_size " +
                                                  std::to_string(options.world_size) + " (ranks are 0-based)");
  }
  if (options.repeated_aug == 0 || options.repeated_aug > kMaxRepeatedAug) {
    return Error(ErrorCode::kInvalidArgument, "repeated_aug " + std::to_string(options.repeated_aug) +
                                                  " is out of range [1, " + std::to_string(kMaxRepeatedAug) +
                                                  "] (copies of each sample per epoch; 1 = off)");
  }
  if (options.dataset_size > (uint64_t{1} << 58)) {  // n * K * 2 stays below 2^64 (positions + rank)
    return Error(ErrorCode::kInvalidArgument, "the dataset is too large to sample (over 2^58 samples)");
  }
  Sampler s(options);
  if (s.batches_per_epoch_ == 0) {
    return Error(ErrorCode::kInvalidArgument,
                 "an epoch would have no batches: " + std::to_string(s.samples_per_epoch_) +
                     " samples per rank with batch_size " + std::to_string(options.batch_size) +
                     " and drop_last (of the last batch); use a smaller batch_size or drop_last=false");
  }
  return s;
}

std::vector<int64_t> Sampler::permutation(uint64_t n, uint64_t seed, uint64_t epoch) {
  const IndexPermutation perm(n, seed, epoch);
  std::vector<int64_t> p(n);
  for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(perm.at(i));
  return p;
}

void Sampler::indices(uint64_t epoch, uint64_t first, std::span<int64_t> out) const {
  // DistributedSampler pads the list to samples_per_epoch * w by repeating its head (cyclically, for tiny
  // datasets) or truncates it (drop_last), then rank r takes positions r, r + w, ...: position j of the padded
  // list is entry j % m of the repeated list, and entry e of that is all[e / K] (K = 1: all[j % n]), where all is
  // the shuffle's permutation (index_permutation.h), taken one index at a time: nothing of size n is ever made.
  std::optional<IndexPermutation> perm;
  if (options_.shuffle) perm.emplace(options_.dataset_size, options_.seed, epoch);
  const uint64_t w = options_.world_size, k = options_.repeated_aug;
  for (size_t j = 0; j < out.size(); ++j) {
    const uint64_t entry = ((options_.rank + (first + j) * w) % entries_) / k;
    uint64_t position = perm ? perm->at(entry) : entry;
    if (options_.subset) position = options_.subset->at(position);
    out[j] = static_cast<int64_t>(position);
  }
}

std::vector<int64_t> Sampler::epoch_indices(uint64_t epoch) const {
  std::vector<int64_t> all(samples_per_epoch_);
  if (random_windows()) {
    const uint32_t b = options_.batch_size;
    for (uint64_t batch = 0; batch < batches_per_epoch_; ++batch) {
      batch_draws(epoch, batch, std::span<int64_t>(all).subspan(batch * b, b));
    }
    return all;
  }
  indices(epoch, 0, all);
  return all;
}

uint32_t Sampler::copy_at(uint64_t position) const {
  return static_cast<uint32_t>(((options_.rank + position * options_.world_size) % entries_) % options_.repeated_aug);
}

std::pair<uint64_t, uint64_t> Sampler::batch_range(uint64_t batch) const {
  const uint64_t begin = batch * options_.batch_size;
  const uint64_t end = std::min<uint64_t>(begin + options_.batch_size, samples_per_epoch_);
  return {begin, end};
}

void Sampler::batch_draws(uint64_t epoch, uint64_t batch, std::span<int64_t> out) const {
  draw_windows(options_.dataset_size, options_.seed, options_.rank, epoch * batches_per_epoch_ + batch, out);
}

}  // namespace batchd::daemon
