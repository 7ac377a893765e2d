// segment_pool.h — the owner of every stream segment the daemon makes: admission against the /dev/shm budget,
// creation, the segment header, and release (unlink) when the stream is closed.
//
// create() turns a StreamPlan into a Segment: it admits the segment's bytes against the budget (limits.max_shm_bytes
// and, for file_system, the free space of /dev/shm: shm_budget.h), allocates the next stream id, creates the object
// — file_descriptor: a sealed memfd "batchd.<daemon-pid>.<id>"; file_system: /dev/shm/batchd.<daemon-pid>.<id>,
// mode 0660 — reserved page by page with posix_fallocate (a small /dev/shm fails here, never as SIGBUS later), and
// writes the versioned SegmentHeader. It then stamps the stream id and segment name into the plan's StreamOpened
// and WorkerAttach. Nothing is prefaulted here: the daemon keeps no mapping (it would be inherited by every worker
// forked later); each worker and the client prefault their own mapping (MAP_POPULATE) once.
//
// A Segment is move-only; destroying it unlinks the name (file_system), drops the daemon's fd (the memfd dies with
// the last mapping) and returns its bytes to the budget. The pool must outlive its segments.
//
// Not thread-safe: the daemon's io_context thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "batchd/wire/shared_memory.h"
#include "streams/plan.h"
#include "streams/shm_budget.h"

namespace batchd::daemon {

class Segment final {
 public:
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  uint64_t stream_id() const { return stream_id_; }
  int fd() const { return memory_.fd(); }
  uint64_t bytes() const { return memory_.size(); }
  // "/dev/shm/batchd.<pid>.<id>" (file_system) or "memfd:batchd.<pid>.<id>" (file_descriptor).
  std::string display_name() const;
  // A new fd for the client (file_descriptor): read-only unless `writable`; the size stays sealed.
  Result<wire::UniqueFd> client_fd(bool writable) const { return memory_.reopen(writable); }

 private:
  friend class SegmentPool;
  Segment(uint64_t stream_id, wire::SharedMemory memory, ShmBudget* budget)
      : stream_id_(stream_id), memory_(std::move(memory)), budget_(budget) {}
  void release();

  uint64_t stream_id_ = 0;
  wire::SharedMemory memory_;
  ShmBudget* budget_ = nullptr;  // charged memory_.size(); null once moved from
};

class SegmentPool final {
 public:
  // max_shm_bytes: limits.max_shm_bytes (0 = half of physical memory); shm_dir: where file_system names live.
  explicit SegmentPool(uint64_t max_shm_bytes, std::string shm_dir = "/dev/shm");
  SegmentPool(const SegmentPool&) = delete;  // every Segment points at this pool's budget
  SegmentPool& operator=(const SegmentPool&) = delete;

  // Admits, creates and stamps as described above. kResourceExhausted (naming the budget or /dev/shm's free space
  // and how to raise it) before anything is created; kIo if creation fails (the message names the segment).
  Result<Segment> create(StreamPlan* plan);

  uint64_t bytes_in_use() const { return budget_.in_use(); }
  uint64_t bytes_limit() const { return budget_.limit(); }

 private:
  ShmBudget budget_;
  uint64_t next_id_ = 1;
};

}  // namespace batchd::daemon
