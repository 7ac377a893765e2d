#include "streams/bad_samples.h"

#include <iterator>

namespace batchd::daemon {

std::map<int64_t, int64_t>::const_iterator BadSamples::run_of(int64_t sample) const {
  auto it = runs_.upper_bound(sample);  // the first run starting after `sample`
  if (it == runs_.begin()) return runs_.end();
  --it;
  return sample < it->second ? it : runs_.end();
}

bool BadSamples::contains(int64_t sample) const { return run_of(sample) != runs_.end(); }

bool BadSamples::insert(int64_t sample) {
  if (contains(sample)) return false;
  ++size_;
  auto next = runs_.upper_bound(sample);
  int64_t end = sample + 1;
  if (next != runs_.end() && next->first == end) {  // joins the run that starts right after it
    end = next->second;
    next = runs_.erase(next);
  }
  if (next != runs_.begin()) {
    auto prev = std::prev(next);
    if (prev->second == sample) {  // extends the run that ends right before it
      prev->second = end;
      return true;
    }
  }
  runs_.emplace_hint(next, sample, end);
  return true;
}

int64_t BadSamples::next_good(int64_t sample) const {
  auto it = run_of(sample);
  if (it == runs_.end()) return sample;
  if (it->second < dataset_size_) return it->second;  // runs are never adjacent: the end of one is good
  it = run_of(0);  // the run reaches the last sample: wrap around
  return it == runs_.end() ? 0 : it->second;
}

}  // namespace batchd::daemon
