#include "streams/error_policy.h"

#include <algorithm>

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

Status ErrorPolicy::after_worker_death(wire::WorkerTask* task, const TaskLoss& loss) {
  ++deaths_;
  const std::string where = "batch " + std::to_string(task->batch()) + " of epoch " + std::to_string(task->epoch());
  const int64_t culprit = loss.culprit;
  if (culprit >= 0 && ++crash_deaths_ > kMaxDeaths) {
    return Error(ErrorCode::kDataError, std::to_string(crash_deaths_) + " workers crashed or hung making this "
                                            "stream's batches (last: " + loss.cause + ", " + where +
                                            "); giving up on the stream");
  }
  if (culprit >= 0) {
    Blame& blame = blamed_[culprit];
    ++(loss.timed_out ? blame.hangs : blame.crashes);
    if (blame.crashes + blame.hangs >= kCrashesToPoison) {
      if (on_error_ == wire::ON_ERROR_FAIL) {
        const std::string verb = blame.hangs == 0 ? "crashed" : blame.crashes == 0 ? "hung" : "crashed or hung";
        return Error(ErrorCode::kDataError,
                     "sample " + std::to_string(culprit) + " of dataset '" + dataset_ + "' " + verb + " " +
                         std::to_string(blame.crashes + blame.hangs) + " workers (" + loss.cause + ", " + where +
                         "): bad input, or " +
                         (blame.hangs == 0 ? "its memory was changed under the worker"
                                           : "daemon.per_sample_timeout_ms is too short for it") +
                         "; open the stream with on_error=skip to skip such samples");
      }
      BATCHD_RETURN_IF_ERROR(mark_bad(culprit));
    }
  } else if (task->attempt() + 1 >= kMaxAttempts) {
    return Error(ErrorCode::kDataError, where + " killed " + std::to_string(kMaxAttempts) + " workers in a row (" +
                                            loss.cause + ") before they reached a sample; the daemon log has details");
  } else {
    task->set_attempt(task->attempt() + 1);
  }
  return ok_status();
}

void ErrorPolicy::substitute(std::span<const int64_t> original, wire::WorkerTask* task) const {
  // From the sampler's indices, so a position is counted once however many bad samples its replacement stepped
  // over; the positions made already keep their indices (they are in the slot).
  const int size = static_cast<int>(original.size());
  const int made = task->indices_size() == size ? static_cast<int>(std::min<uint32_t>(task->made(), size)) : 0;
  task->mutable_indices()->Resize(size, 0);
  uint32_t skipped = 0;
  for (int p = 0; p < size; ++p) {
    if (p >= made) task->set_indices(p, bad_.next_good(original[p]));
    skipped += task->indices(p) != original[p];
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
