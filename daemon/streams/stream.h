// stream.h — one client's iteration over one dataset: its plan, its segment, and the three parts that track it:
//   SlotRing     which batch each slot holds, and the order of making and delivery (slot_ring.h);
//   ErrorPolicy  bad samples, dead workers, and the batch at which the stream fails (error_policy.h);
//   StreamStats  what status and metrics show (stream_stats.h).
// Stream turns sequences into tasks (the sampler's indices of a batch, with bad samples substituted) and slot
// transitions into BatchReady events; it keeps its own queue of tasks to redo, served before its other tasks
// (scheduler.h: in its own round-robin turn). With remote shards a task waits (parked) until its shards are on
// this host's disk (remote_reads.h).
//
// Not thread-safe: owned by the StreamManager on the daemon's io_context thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "batchd.pb.h"
#include "streams/batch_order.h"
#include "streams/chunking.h"
#include "streams/error_policy.h"
#include "streams/plan.h"
#include "streams/remote_reads.h"
#include "streams/segment_pool.h"
#include "streams/slot_ring.h"
#include "streams/stream_stats.h"
#include "base/task.h"

namespace batchd::daemon {

// Who opened a stream: the connection and the peer's credentials (SO_PEERCRED).
struct Peer {
  uint64_t connection_id = 0;
  int32_t pid = 0;
  uint32_t uid = 0;
  bool admin = false;  // server/authorization.h: may see every stream (shares are per uid, admins' too)
};

class Stream final {
 public:
  enum class State { kRunning, kEnded, kFailed };

  // `chunk_policy` decides how many chunks (tasks) each batch is made in (chunking.h).
  Stream(Peer owner, StreamPlan plan, Segment segment, ChunkPolicy chunk_policy = {});

  uint64_t id() const { return segment_.stream_id(); }
  const Peer& owner() const { return owner_; }
  State state() const { return state_; }
  bool running() const { return state_ == State::kRunning; }
  const wire::StreamOpened& opened() const { return plan_.opened; }
  const wire::WorkerAttach& attach() const { return plan_.attach; }
  int segment_fd() const { return segment_.fd(); }
  uint64_t segment_bytes() const { return segment_.bytes(); }

  // The next chunk to make: a redo (requeue()), oldest first; else a chunk of a batch already claimed; else of the
  // next batch, claiming a free slot; nullopt if there is none of these, the stream is not running, or the next
  // batch is at or after a failed one. Indices are substituted here, at dispatch.
  std::optional<Task> next_task();
  // `task` (from after_worker_death or after_bad_sample) is made again: next_task() returns it before any other
  // chunk of this stream. The Scheduler serves it in this stream's round-robin turn, never ahead of other streams.
  void requeue(Task task) { redo_.push_back(std::move(task)); }
  // A worker finished `task` (ignored unless its slot is working on that batch and the chunk is pending); the
  // slot is ready once its last chunk is done.
  void on_done(const Task& task);
  // The batches now deliverable in order; their slots become leased.
  std::vector<wire::BatchReady> take_deliverable();
  // Returns one holder's lease of `sequence`; kInvalidArgument if it is not leased.
  Status release(uint64_t sequence);

  // Shared productions (share.h). The order of the batches (batch_order.h): remade runs and the plain total may
  // change only at sequences not claimed yet (next_claim()).
  const BatchOrder& order() const { return order_; }
  uint64_t next_claim() const { return ring_.next_claim(); }
  uint64_t next_deliver() const { return ring_.next_deliver(); }
  void set_plain_total(uint64_t plain_total);
  void insert_remakes(uint64_t epoch, uint64_t count, uint64_t owner);
  void drop_remakes(uint64_t owner);
  // The delivered batch in `slot` is leased to `holders` subscribers (0 frees the slot).
  void set_holders(uint32_t slot, uint32_t holders) { ring_.set_holders(slot, holders); }
  // Remote shards (streams/remote_reads.h): tasks wait for their shards, and the next batches' shards are fetched
  // ahead. Set once, right after construction.
  void set_remote(std::unique_ptr<RemoteReads> remote) { remote_ = std::move(remote); }
  // A task that will not be done nor redone (it failed the stream, or its stream stopped running): its remote
  // shards are let go. on_done and the redo paths do this themselves.
  // Whether a task was refused at hand-out since the last call (the stream fails at it: StreamManager delivers).
  bool take_admission_failure() { return std::exchange(admission_failed_, false); }
  void task_ended(const Task& task) {
    if (remote_ != nullptr) remote_->finished(task);
  }
  // Batches remain to be made but no slot is free.
  bool out_of_slots() const {
    return running() && ring_.next_claim() < ring_.total() && !ring_.can_claim(policy_.failing_sequence());
  }
  // Batches remain to be made and every slot is leased (none free, none being made): nothing changes until a holder
  // releases a batch.
  bool blocked_on_leases() const {
    return out_of_slots() && ring_.counts()[static_cast<int>(SlotRing::State::kLeased)] == ring_.size();
  }
  // The oldest leased sequence (nullopt if none is leased).
  std::optional<uint64_t> oldest_leased() const { return ring_.oldest_leased(); }
  uint64_t batches_made() const { return batches_made_; }
  uint64_t batches_remade() const { return batches_remade_; }
  // A new fd of the segment for a client (file_descriptor), read-only unless `writable`.
  Result<wire::UniqueFd> client_fd(bool writable) const { return segment_.client_fd(writable); }

  // Every batch of every requested epoch has been delivered (once true, the caller sends StreamEnd once).
  bool all_delivered() const { return ring_.next_deliver() == ring_.total(); }
  void mark_ended() { state_ = State::kEnded; }
  void mark_failed() { state_ = State::kFailed; }

  // See ErrorPolicy: the task to redo (indices substituted), or the error that fails the stream. After a bad sample
  // the redo resumes at the position that failed (WorkerTask.made): the worker made every position before it.
  Result<Task> after_worker_death(Task task, const TaskLoss& loss);
  Result<Task> after_bad_sample(Task task, int64_t sample, const Error& error);
  void fail_at(uint64_t sequence, Error error) { policy_.fail_at(sequence, std::move(error)); }
  std::optional<Error> due_failure() const { return policy_.due_failure(ring_.next_deliver()); }

  // Worker `worker` answered a chunk of `samples` (done or failed): its stage times count; a successful chunk also
  // feeds the measured time per sample (chunk sizes follow it) and chunks_by_worker.
  void add_work(size_t worker, const wire::WorkerDone& done, uint32_t samples) { stats_.add_work(worker, done, samples); }
  wire::StreamInfo info() const;
  wire::SegmentInfo segment_info() const;

 private:
  // The sampler's indices of positions [begin, end) of batch `batch` of `epoch` (the epoch's order is cached).
  std::span<const int64_t> sampler_indices(uint64_t epoch, uint64_t batch, uint32_t begin, uint32_t end);
  // Claims a slot for the next batch and queues its chunks in chunks_ (and, with remote shards, looks ahead).
  void claim_next_batch();
  // `task` if it may go to a worker now (remote shards: all here); else parks it (or fails the stream at it).
  std::optional<Task> admitted(Task task);
  void look_ahead();
  // Sets task's indices for positions [begin, end) from the sampler, bad samples substituted (except the positions
  // made already), with repeated_aug each position's copy number (WorkerTask.copies), and records the chunk's
  // skipped count in its slot.
  void fill_indices(Task* task, uint32_t end);
  Result<Task> redo(Task task, Status decision);
  void observe();

  Peer owner_;
  StreamPlan plan_;
  Segment segment_;
  State state_ = State::kRunning;
  SlotRing ring_;
  ErrorPolicy policy_;
  StreamStats stats_;
  ChunkPolicy chunk_policy_;
  struct Chunk {
    Task task;     // without indices: they are taken at dispatch (fill_indices)
    uint32_t end;  // one past its last position
  };
  std::deque<Chunk> chunks_;  // chunks of claimed batches not handed out yet, in order
  std::deque<Task> redo_;     // chunks to make again, oldest first (they go before chunks_)
  BatchOrder order_;
  uint64_t batches_made_ = 0, batches_remade_ = 0;
  // This rank's indices of the two epochs used last (a late subscriber's remade batches of epoch e are made while
  // the production is in e + 1).
  std::vector<int64_t> draws_;  // the indices sampler_indices() gave last
  std::unique_ptr<RemoteReads> remote_;  // remote shards only
  std::optional<Task> parked_;           // taken, waiting for its remote shards
  bool admission_failed_ = false;        // admitted() refused a task (take_admission_failure)
};

}  // namespace batchd::daemon
