// batchd/worker.h — a worker process of your own Dataset, attached to one of your streams (docs/operations.md,
// "Your own Dataset"). batchd.Loader starts such workers for a Python Dataset; C++ code may be one too.
//
// The daemon never runs your code. A stream opened with an external dataset (its length and the layout of one
// sample: StreamOptions is not involved; the Python Loader sends OpenStream.external) is made by the worker
// processes that attach to it: each gets the stream's segment (mapped read-write once), then tasks — the sample
// indices of rows [begin, end) of one slot of the segment — and answers each with done() or fail_sample(). The
// daemon runs the sampler, the slots, leases, back-pressure, the watchdog and the on_error policy as for its own
// workers. Only a process of the stream owner's uid may attach, and only to that stream.
//
// Per sample: set_progress(task, index) (the daemon blames that sample if this process dies or hangs on it), then
// write each field's bytes into row(task, field, position). done() writes the task's "index" rows and answers.
//
// exit_on_detach (the default): a background thread reads the connection; when the daemon detaches this worker
// (its task passed the watchdog's deadline: WorkerDetach.must_exit), the daemon goes away, or `parent_pid` is set
// and this process's parent is no longer it (the trainer died), the process exits at once with _exit(kExitCode):
// a worker stuck in user code cannot be reached otherwise, and its task is redone by another worker. A detach
// with reason "closed" (the stream was closed or ended) is not an error: next_task() returns nullopt, and the
// worker may attach to the trainer's next stream.
//
// Thread-safe as far as one thread calls next_task/done/fail_sample (the reader thread is internal).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batchd/batch.h"
#include "batchd/connect.h"
#include "batchd/result.h"

namespace batchd {

namespace detail {
class AttachedWorkerCore;
}  // namespace detail

class AttachedWorker final {
 public:
  // _exit status of a worker that exit_on_detach ended (the Loader reports it).
  static constexpr int kExitCode = 75;

  struct Options {
    ConnectOptions connect;
    bool exit_on_detach = true;
    pid_t parent_pid = 0;  // > 0: exit when getppid() differs (checked every 200 ms)
    // A round-robin stream's (ExternalDataset::round_robin) worker number, 0 .. workers - 1: it gets batches j with
    // j % workers == worker. Ignored by other streams.
    uint32_t worker = 0;
  };
  // One field of a sample: the batch tensor is [batch_size] + sample_shape of dtype, at `offset` in each slot.
  struct Field {
    std::string name;
    DType dtype = DType::kUInt8;
    std::vector<int64_t> sample_shape;
    size_t sample_bytes = 0;  // product(sample_shape) * dtype_size(dtype)
  };
  // One unit of work: rows [begin, begin + indices.size()) of slot `slot`; rows before begin + made are made
  // already (a redo after a bad sample resumes there). copies[i]: which repeated-augmentation copy indices[i] is
  // (empty: all 0).
  struct Task {
    uint64_t stream_id = 0, sequence = 0, epoch = 0, batch = 0;
    uint32_t slot = 0, begin = 0, made = 0, attempt = 0;
    uint32_t batch_samples = 0;  // samples in the whole batch (the slot header's count)
    std::vector<int64_t> indices;
    std::vector<uint32_t> copies;
  };

  // Connects and attaches to stream `stream_id`. Errors: as Client::connect; the daemon's refusal (kNotFound: no
  // such stream of this uid; kInvalidArgument: not an external stream; kResourceExhausted:
  // limits.max_attached_workers); kProtocol for a malformed attachment.
  static Result<std::unique_ptr<AttachedWorker>> attach(uint64_t stream_id, const Options& options);
  ~AttachedWorker();  // closes the connection (a task in flight is redone by another worker)

  const std::vector<Field>& fields() const;  // in the stream's order, without "index"
  uint32_t worker() const;                   // this worker's number among the stream's attached workers
  uint64_t seed() const;                     // the stream's seed (OpenStream.seed)
  uint32_t batch_size() const;
  uint64_t stream_id() const;

  // The next task; nullopt once the stream is closed (detach "closed"); at `timeout` (never by default)
  // kDeadlineExceeded, nothing lost. Errors: the connection broke (the daemon went away).
  Result<std::optional<Task>> next_task(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Where row `position` (begin <= position < begin + indices.size()) of field `field` of the task's slot starts:
  // sample_bytes writable bytes. nullptr for a position outside the task or an unknown field: no write can reach
  // another task's rows or another slot through this API.
  void* row(const Task& task, size_t field, uint32_t position) const;
  // Before each sample: the daemon blames `sample` if this process dies or hangs before the next call.
  void set_progress(const Task& task, int64_t sample);
  // Writes the task's "index" rows and reports it done. spent: the whole task's time; dataset: of it, the time in
  // the dataset's own code (shown as the stream's "read" stage); collate: writing the rows (its "normalize" stage,
  // which is the collate for the daemon's own pipelines too). The done lists the bytes written (WorkerDone.written,
  // checked by the daemon): the slot header, the index rows, and each field's rows, or with field_bytes (one entry
  // per field) only the first field_bytes[i] bytes of field i from the task's first row (a collated batch's size).
  // kInvalidArgument: a task not this worker's, or field_bytes of the wrong length or over the task's rows.
  Status done(const Task& task, std::chrono::nanoseconds spent = {}, std::chrono::nanoseconds dataset = {},
              std::chrono::nanoseconds collate = {}, const std::vector<uint64_t>& field_bytes = {});
  // Sample `sample` of the task could not be made: `message` (e.g. a Python exception's last line) reaches the
  // trainer (on_error=fail) or the sample is replaced and the task comes again (on_error=skip).
  Status fail_sample(const Task& task, int64_t sample, const std::string& message);

 private:
  explicit AttachedWorker(std::unique_ptr<detail::AttachedWorkerCore> core);
  std::unique_ptr<detail::AttachedWorkerCore> core_;
};

}  // namespace batchd
