#include "streams/sample_subset.h"

#include <algorithm>
#include <string>

namespace batchd::daemon {

namespace {
Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }
}  // namespace

Result<std::shared_ptr<const SampleSubset>> SampleSubset::make(const wire::SampleSubset& subset,
                                                               uint64_t dataset_size) {
  if (subset.run_starts_size() != subset.run_lengths_size()) {
    return invalid("subset has " + std::to_string(subset.run_starts_size()) + " run starts and " +
                   std::to_string(subset.run_lengths_size()) + " run lengths: give one length per start");
  }
  if (subset.run_starts_size() == 0) {
    return invalid("the subset is empty: a stream needs at least one index (leave subset unset to read the whole "
                   "dataset)");
  }
  auto out = std::make_shared<SampleSubset>();
  out->starts_.reserve(subset.run_starts_size());
  out->firsts_.reserve(subset.run_starts_size());
  for (int k = 0; k < subset.run_starts_size(); ++k) {
    const uint64_t start = subset.run_starts(k), length = subset.run_lengths(k);
    if (length == 0) return invalid("subset run " + std::to_string(k) + " has length 0 (each run holds >= 1 index)");
    if (length > dataset_size || out->size_ > dataset_size - length) {
      return invalid("the subset holds more than the dataset's " + std::to_string(dataset_size) +
                     " samples (a subset lists at most as many indices as its dataset has)");
    }
    if (start >= dataset_size || length > dataset_size - start) {
      const uint64_t bad = std::max(start, dataset_size);
      return invalid("subset index " + std::to_string(bad) + " (position " +
                     std::to_string(out->size_ + (bad - start)) + " of the subset) is out of range for a dataset "
                     "of " + std::to_string(dataset_size) + " samples (indices are 0-based): build the Subset over "
                     "this dataset's indices");
    }
    out->starts_.push_back(start);
    out->firsts_.push_back(out->size_);
    out->size_ += length;
  }
  return std::shared_ptr<const SampleSubset>(std::move(out));
}

int64_t SampleSubset::at(uint64_t position) const {
  const auto run = std::upper_bound(firsts_.begin(), firsts_.end(), position) - firsts_.begin() - 1;
  return static_cast<int64_t>(starts_[run] + (position - firsts_[run]));
}

}  // namespace batchd::daemon
