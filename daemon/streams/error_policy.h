// error_policy.h — what one stream does about bad samples and dead workers (the stream's on_error policy), and
// the batch at which it fails.
//
// - A sample that cannot be read or decoded (a per-sample kDataError from a worker): on_error=fail fails the stream
//   naming the sample and the file; on_error=skip marks it bad.
// - A worker that died on a sample (a crash signal raised by the worker itself) or was killed by the watchdog while
//   on a sample (its task was past its deadline: the sample hangs it): after kCrashesToPoison such deaths on the
//   same sample, crashes and timeouts together, the sample is bad input — on_error=fail fails the stream naming it,
//   skip marks it bad. Only the sample on the worker's progress page is blamed, never the rest of its task. Deaths
//   with no sample to blame (SIGKILL from outside, a timeout between samples) are retried up to kMaxAttempts times
//   per task; kMaxDeaths blamed deaths in all fail the stream.
// - A bad sample is replaced, in this and every later batch, by the next sample in dataset order that is not bad
//   (substitute(); one lookup in the bad runs, bad_samples.h), and counted in the task's `skipped`. A task redone
//   after a bad sample keeps the positions its worker made before it (WorkerTask.made): they are neither made nor
//   substituted again, so a run of N bad samples costs N redos that each try one bad sample, not N whole chunks.
// - fail_at() records the earliest batch that cannot be made: the stream delivers every batch before it, in order,
//   then fails with its error.
//
// Plain value type; not thread-safe (the daemon's io_context thread).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "streams/bad_samples.h"
#include "base/task.h"

namespace batchd::daemon {

class ErrorPolicy final {
 public:
  static constexpr int kCrashesToPoison = 2;
  static constexpr uint32_t kMaxAttempts = 3;
  static constexpr uint64_t kMaxDeaths = 64;

  ErrorPolicy(wire::OnError on_error, std::string dataset, uint64_t dataset_size)
      : on_error_(on_error), dataset_(std::move(dataset)), dataset_size_(dataset_size), bad_(dataset_size) {}

  // Sample `sample` of `task` could not be made (`error` names the file and why). ok: make the task again after
  // substitute(); otherwise the error that fails the stream.
  Status after_bad_sample(int64_t sample, const Error& error);
  // A worker died making `task` (or the watchdog killed it: loss.timed_out) on sample loss.culprit (-1: unknown),
  // loss.cause e.g. "killed by signal Segmentation fault". ok: redo the task (its attempt is counted) after
  // substitute(); otherwise the error that fails the stream.
  Status after_worker_death(wire::WorkerTask* task, const TaskLoss& loss);

  // Sets task->indices to `original` (the sampler's indices of the task's positions) with every bad sample
  // replaced, except the first task->made positions, which keep the indices they were made with (task->indices
  // must hold original.size() of them then); task->skipped = the positions whose index is not the original.
  // O(positions × log(bad runs)).
  void substitute(std::span<const int64_t> original, wire::WorkerTask* task) const;
  bool any_bad() const { return bad_.size() > 0; }

  // Batch `sequence` cannot be made: keeps the earliest such batch and its error.
  void fail_at(uint64_t sequence, Error error);
  // The first batch not to deliver (UINT64_MAX: none).
  uint64_t failing_sequence() const { return failure_ ? failure_->first : UINT64_MAX; }
  // The error to fail with once every batch before the failing one is delivered (`next_deliver` = that point).
  std::optional<Error> due_failure(uint64_t next_deliver) const;

  wire::OnError on_error() const { return on_error_; }
  uint64_t worker_deaths() const { return deaths_; }

 private:
  Status mark_bad(int64_t sample);

  wire::OnError on_error_;
  std::string dataset_;
  uint64_t dataset_size_;
  struct Blame {
    int crashes = 0, hangs = 0;  // workers it crashed; workers killed past their deadline while on it
  };
  std::map<int64_t, Blame> blamed_;  // by sample
  BadSamples bad_;                  // samples replaced under on_error=skip
  uint64_t deaths_ = 0;             // all worker deaths during this stream's batches
  uint64_t crash_deaths_ = 0;       // those blamed on a sample
  std::optional<std::pair<uint64_t, Error>> failure_;  // (sequence, error) of the earliest batch that failed
};

}  // namespace batchd::daemon
