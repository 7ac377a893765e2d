#include "streams/error_policy.h"

namespace batchd::daemon {

Status ErrorPolicy::after_bad_sample(int64_t sample, const Error& error) {
  if (on_error_ == wire::ON_ERROR_FAIL) {
    return Error(error.code(), "sample " + std::to_string(sample) + " of dataset '" + dataset_ + "': " +
                                   error.message() + " (open the stream with on_error=skip to skip bad samples)");
  }
  return mark_bad(sample);
}

Status ErrorPolicy::mark_bad(int64_t sample) {
  bad_.insert(sample);
  if (bad_.size() >= dataset_size_) {  // substitute() would search forever
    return Error(ErrorCode::kDataError, "every sample of dataset '" + dataset_ + "' is bad (on_error=skip skipped " +
                                            std::to_string(bad_.size()) + "); check the dataset's files");
  }
  return ok_status();
}

Status ErrorPolicy::after_worker_death(wire::WorkerTask* task, int64_t culprit, const std::string& cause) {
  ++deaths_;
  const std::string where = "batch " + std::to_string(task->batch()) + " of epoch " + std::to_string(task->epoch());
  if (culprit >= 0 && ++crash_deaths_ > kMaxDeaths) {
    return Error(ErrorCode::kDataError, std::to_string(crash_deaths_) + " workers crashed making this stream's "
                                            "batches (last: " + cause + ", " + where + "); giving up on the stream");
  }
  if (culprit >= 0) {
    if (++crashes_[culprit] >= kCrashesToPoison) {
      if (on_error_ == wire::ON_ERROR_FAIL) {
        return Error(ErrorCode::kDataError,
                     "sample " + std::to_string(culprit) + " of dataset '" + dataset_ + "' crashed " +
                         std::to_string(crashes_[culprit]) + " workers (" + cause + ", " + where +
                         "): bad input, or its memory was changed under the worker; open the stream with "
                         "on_error=skip to skip such samples");
      }
      BATCHD_RETURN_IF_ERROR(mark_bad(culprit));
    }
  } else if (task->attempt() + 1 >= kMaxAttempts) {
    return Error(ErrorCode::kDataError, where + " killed " + std::to_string(kMaxAttempts) + " workers in a row (" +
                                            cause + ") before they reached a sample; the daemon log has details");
  } else {
    task->set_attempt(task->attempt() + 1);
  }
  return ok_status();
}

void ErrorPolicy::substitute(std::span<const int64_t> original, wire::WorkerTask* task) const {
  // From the sampler's indices, so a position is counted once however many bad samples its replacement stepped
  // over.
  task->mutable_indices()->Resize(static_cast<int>(original.size()), 0);
  const auto n = static_cast<int64_t>(dataset_size_);
  uint32_t skipped = 0;
  for (size_t p = 0; p < original.size(); ++p) {
    int64_t idx = original[p];
    if (bad_.count(idx)) {
      do idx = (idx + 1) % n;
      while (bad_.count(idx));
      ++skipped;
    }
    task->set_indices(static_cast<int>(p), idx);
  }
  task->set_skipped(skipped);
}

void ErrorPolicy::fail_at(uint64_t sequence, Error error) {
  if (!failure_ || sequence < failure_->first) failure_.emplace(sequence, std::move(error));
}

std::optional<Error> ErrorPolicy::due_failure(uint64_t next_deliver) const {
  if (failure_ && next_deliver == failure_->first) return failure_->second;
  return std::nullopt;
}

}  // namespace batchd::daemon
