// sample_subset.h — the dataset indices a stream reads, in order (OpenStream.subset: torch.utils.data.Subset's
// indices), kept as runs of consecutive indices so Subset(ds, range(a, n)) costs one run whatever its length.
//
// The sampler shuffles, shards and batches positions 0 .. size()-1 and maps each position to its dataset index with
// at(): the batches' `index` tensor holds dataset indices. Immutable after make(); shared by every copy of a
// stream's Sampler; thread-safe to read.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"

namespace batchd::daemon {

class SampleSubset final {
 public:
  // kInvalidArgument naming the problem: run_starts and run_lengths of different counts; a run of length 0; no
  // index at all; more indices in all than the dataset has samples (each subset lists at most dataset_size
  // indices); an index >= dataset_size (the first such index and its position in the subset named).
  static Result<std::shared_ptr<const SampleSubset>> make(const wire::SampleSubset& subset, uint64_t dataset_size);

  uint64_t size() const { return size_; }
  // The dataset index at `position` (< size()): O(log runs).
  int64_t at(uint64_t position) const;

 private:
  std::vector<uint64_t> starts_;  // run k's first dataset index
  std::vector<uint64_t> firsts_;  // run k's first position in the subset (ascending, firsts_[0] = 0)
  uint64_t size_ = 0;
};

}  // namespace batchd::daemon
