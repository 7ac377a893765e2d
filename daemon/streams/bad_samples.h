// bad_samples.h — the samples of one stream found bad under on_error=skip, kept as maximal runs of consecutive
// indices, and the replacement of a bad sample: the next sample in dataset order (cyclically) that is not bad.
//
// A run of k consecutive bad samples is one entry, however it was found (in order, backwards, or scattered and
// joined later), so insert(), contains() and next_good() cost O(log R) with R the number of separate runs: the
// replacement of any sample of a run of 20,000 is one lookup, never a walk over the run.
//
// Indices are in [0, dataset_size). next_good() needs at least one good sample (size() < dataset_size); the error
// policy fails the stream before that (error_policy.h).
//
// Plain value type; not thread-safe (the daemon's io_context thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace batchd::daemon {

class BadSamples final {
 public:
  explicit BadSamples(uint64_t dataset_size) : dataset_size_(static_cast<int64_t>(dataset_size)) {}

  // Marks `sample` bad; false if it was already.
  bool insert(int64_t sample);
  bool contains(int64_t sample) const;
  // `sample` if it is good, else the first good sample after it in dataset order, wrapping to 0 after the last.
  int64_t next_good(int64_t sample) const;

  uint64_t size() const { return size_; }
  // The number of separate runs of consecutive bad samples (each one map entry).
  size_t runs() const { return runs_.size(); }

 private:
  // The run holding `sample`, or end().
  std::map<int64_t, int64_t>::const_iterator run_of(int64_t sample) const;

  int64_t dataset_size_;
  std::map<int64_t, int64_t> runs_;  // first -> one past the last, disjoint and never adjacent
  uint64_t size_ = 0;
};

}  // namespace batchd::daemon
