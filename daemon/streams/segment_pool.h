// segment_pool.h — the owner of every stream segment the daemon makes: admission against the /dev/shm budget,
// creation, access, the segment header, and release (unlink) when the stream is closed.
//
// create() turns a StreamPlan into a Segment: it admits the segment's bytes against the budget (limits.max_shm_bytes
// and, for file_system, the free space of /dev/shm: shm_budget.h), allocates the next stream id, creates the object
// — file_descriptor: a sealed memfd "batchd.<instance>.<id>"; file_system: /dev/shm/batchd.<instance>.<id>, mode
// 0600, owned by the daemon's uid, with one POSIX ACL entry for the client's uid, read-only unless the stream is
// writable (segment_acl.h) — reserved page by page with posix_fallocate (a small /dev/shm fails here, never as
// SIGBUS later), and writes the versioned SegmentHeader. It then stamps the stream id and segment name into the
// plan's StreamOpened and WorkerAttach. Nothing is prefaulted here: the daemon keeps no mapping (it would be
// inherited by every worker forked later); each worker and the client prefault their own mapping (MAP_POPULATE)
// once.
//
// <instance> is the daemon's SegmentInstance id (segment_instance.h), which the pool owns: its lock proves the
// segments alive to every collector (proto's wire/shm_scan.h), and it is released after the last segment.
//
// A Segment is move-only; destroying it unlinks the name (file_system), drops the daemon's fd (the memfd dies with
// the last mapping) and returns its bytes to the budget. The pool must outlive its segments.
//
// Not thread-safe: the daemon's io_context thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "batchd/wire/shared_memory.h"
#include "streams/plan.h"
#include "streams/segment_instance.h"
#include "base/shm_budget.h"

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
  // "/dev/shm/batchd.<instance>.<id>" (file_system) or "memfd:batchd.<instance>.<id>" (file_descriptor).
  std::string display_name() const;
  // A new fd for the client (file_descriptor): read-only unless `writable`; the size stays sealed.
  Result<wire::UniqueFd> client_fd(bool writable) const { return memory_.reopen(writable); }

 private:
  friend class SegmentPool;
  Segment(uint64_t stream_id, std::string name, wire::SharedMemory memory, ShmBudget* budget)
      : stream_id_(stream_id), name_(std::move(name)), memory_(std::move(memory)), budget_(budget) {}
  void release();

  uint64_t stream_id_ = 0;
  std::string name_;  // batchd.<instance>.<id>
  wire::SharedMemory memory_;
  ShmBudget* budget_ = nullptr;  // charged memory_.size(); null once moved from
};

class SegmentPool final {
 public:
  // instance: this daemon's (segment names carry its id); max_shm_bytes: limits.max_shm_bytes (0 = half of
  // physical memory); shm_dir: where file_system names live.
  SegmentPool(SegmentInstance instance, uint64_t max_shm_bytes, std::string shm_dir = "/dev/shm");
  SegmentPool(const SegmentPool&) = delete;  // every Segment points at this pool's budget
  SegmentPool& operator=(const SegmentPool&) = delete;

  // Admits, creates and stamps as described above; `client_uid` gets the file_system segment's ACL entry (rw- if
  // plan->writable). kResourceExhausted (naming the budget or /dev/shm's free space and how to raise it) before
  // anything is created; kInvalidArgument if /dev/shm has no POSIX ACLs for a client other than the daemon's uid
  // (segment_acl.h); kIo if creation fails (the message names the segment).
  Result<Segment> create(StreamPlan* plan, uid_t client_uid);

  const std::string& instance_id() const { return instance_.id(); }

  uint64_t bytes_in_use() const { return budget_.in_use(); }
  uint64_t bytes_limit() const { return budget_.limit(); }
  // The sample cache's live bytes count in the same budget (limits.max_shm_bytes).
  void set_also_held(std::function<uint64_t()> also_held) { budget_.set_also_held(std::move(also_held)); }

 private:
  SegmentInstance instance_;
  ShmBudget budget_;
  uint64_t next_id_ = 1;
};

}  // namespace batchd::daemon
