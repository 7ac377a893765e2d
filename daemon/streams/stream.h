// stream.h — one client's iteration over one dataset: its sampler, its segment and the state of each slot.
//
// Slot life cycle:  free --next_task()--> working --on_done()--> ready --take_deliverable()--> leased
//                   leased --release()--> free.
// Batches are numbered by `sequence` (0, 1, ... across all the stream's epochs); they are handed to the client in
// sequence order even when workers finish out of order, and at most `depth` are working, ready or leased at once
// (back-pressure). A slot is reused only after its lease is released or the stream is closed.
//
// Not thread-safe: owned by the StreamManager on the daemon's io_context thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "batchd/wire/shared_memory.h"
#include "streams/sampler.h"

namespace batchd::daemon {

struct Peer {
  uint64_t connection_id = 0;
  int32_t pid = 0;
  uint32_t uid = 0;
};

class Stream final {
 public:
  enum class State { kRunning, kEnded, kFailed };

  // `attach` describes the segment and layout to workers; `opened` is the reply sent to the client.
  Stream(uint64_t id, Peer owner, const wire::OpenStream& request, Sampler sampler, wire::SharedMemory memory,
         wire::WorkerAttach attach, wire::StreamOpened opened);

  uint64_t id() const { return id_; }
  const Peer& owner() const { return owner_; }
  State state() const { return state_; }
  const wire::StreamOpened& opened() const { return opened_; }
  const wire::WorkerAttach& attach() const { return attach_; }
  int segment_fd() const { return memory_.fd(); }
  const wire::SharedMemory& memory() const { return memory_; }

  // The next batch to make, claiming a free slot; nullopt if no slot is free, all batches were dispatched, or the
  // stream is not running.
  std::optional<wire::WorkerTask> next_task();

  // A worker finished `sequence` into `slot` (ignored unless that slot is working on it).
  void on_done(uint64_t sequence, uint32_t slot);

  // The batches now deliverable in order; their slots become leased.
  std::vector<wire::BatchReady> take_deliverable();

  // Every batch of every requested epoch has been delivered (once true, the caller sends StreamEnd once).
  bool all_delivered() const { return next_deliver_ == total_batches_; }
  void mark_ended() { state_ = State::kEnded; }

  // Batch `sequence` cannot be made: the stream delivers every batch before it, in order, and then fails with
  // `error` (the earliest failing batch wins). No batch after it is dispatched.
  void fail_at(uint64_t sequence, Error error);
  // The error to fail the stream with now that every batch before the failing one was delivered, if any.
  std::optional<Error> due_failure() const;
  void mark_failed() { state_ = State::kFailed; }
  bool running() const { return state_ == State::kRunning; }

  // Returns the lease of `sequence`; kInvalidArgument if it is not leased.
  Status release(uint64_t sequence);

  // A worker died making `task`, on sample `culprit` (-1: unknown), `cause` e.g. "killed by signal Segmentation
  // fault". Applies the stream's on_error policy: a sample that crashed kCrashesToPoison workers is bad input —
  // on_error=fail fails the stream naming it, on_error=skip replaces it (in this and every later batch) by the next
  // sample in dataset order that is not bad, and counts it. Returns the task to redo, or the error that fails the
  // stream (also after kMaxAttempts deaths of one batch with no sample to blame — SIGKILL, say — or after
  // kMaxDeaths crashes in all).
  Result<wire::WorkerTask> after_worker_death(wire::WorkerTask task, int64_t culprit, const std::string& cause);

  // A sample could not be read or decoded (`error` names the file and why). on_error=fail: returns the error
  // that fails the stream; skip: replaces the sample as above and returns the task to make again.
  Result<wire::WorkerTask> after_bad_sample(wire::WorkerTask task, int64_t sample, const Error& error);

  void add_stage_times(const wire::StageNanos& s);

  static constexpr int kCrashesToPoison = 2;
  static constexpr uint32_t kMaxAttempts = 3;
  static constexpr uint64_t kMaxDeaths = 64;

  wire::StreamInfo info() const;
  wire::SegmentInfo segment_info() const;

 private:
  enum class SlotState { kFree, kWorking, kReady, kLeased };
  struct Slot {
    SlotState state = SlotState::kFree;
    uint64_t sequence = 0;
    uint32_t skipped = 0;
  };
  // Replaces poisoned indices of `task` (on_error=skip), counting them in task->skipped.
  void substitute(wire::WorkerTask* task);

  uint64_t id_;
  Peer owner_;
  wire::OpenStream request_;
  Sampler sampler_;
  wire::SharedMemory memory_;
  wire::WorkerAttach attach_;
  wire::StreamOpened opened_;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  State state_ = State::kRunning;

  std::vector<Slot> slots_;
  uint64_t total_batches_ = 0;
  uint64_t next_dispatch_ = 0;
  uint64_t next_deliver_ = 0;
  uint64_t indices_epoch_ = ~0ull;
  std::vector<int64_t> indices_;  // this rank's indices for indices_epoch_
  std::map<int64_t, int> crashes_;  // sample -> workers it crashed
  std::set<int64_t> poisoned_;      // samples replaced under on_error=skip
  uint64_t deaths_ = 0;        // all worker deaths during this stream's batches
  uint64_t crash_deaths_ = 0;  // those blamed on a sample
  uint64_t skipped_total_ = 0;
  wire::StageNanos stages_;
  std::optional<std::pair<uint64_t, Error>> failure_;  // (sequence, error) of the earliest batch that failed

  // Time accounting (ahead / stall), updated before every slot state change.
  void account();
  std::chrono::steady_clock::time_point last_change_ = created_;
  double ahead_seconds_ = 0, stall_seconds_ = 0;
  uint64_t samples_delivered_ = 0, bytes_delivered_ = 0;
  uint64_t bytes_per_sample_ = 0;
};

}  // namespace batchd::daemon
