// stream_manager.h — opens and closes streams, schedules their batches on the worker pool and delivers them.
//
// open() validates every option and limit *before* allocating anything, then creates the stream's segment
// (file_descriptor: memfd; file_system: /dev/shm/batchd.<daemon-pid>.<stream-id>), reserves it with
// posix_fallocate and prefaults it once. Scheduling is round-robin over streams with a free slot, one batch per
// idle worker; a batch lost with a dead worker is redone first. Events (BatchReady, StreamEnd, StreamFailed) go to
// the owning connection's EventSink.
//
// Not thread-safe: everything runs on the daemon's io_context thread.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <memory>

#include "config.h"
#include "data/dataset.h"
#include "streams/shm_budget.h"
#include "streams/stream.h"
#include "workers/worker_pool.h"

namespace batchd::daemon {

// Where a connection receives its streams' events.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void send_event(const wire::Reply& event) = 0;
};

class StreamManager final {
 public:
  static constexpr uint32_t kMaxWorldSize = 1u << 20;

  StreamManager(const Config& config, const DatasetRegistry& datasets);
  void set_pool(WorkerPool* pool) { pool_ = pool; }

  struct Opened {
    wire::StreamOpened reply;
    wire::UniqueFd client_fd;  // FILE_DESCRIPTOR: the segment's fd for the client (read-write only if it asked)
  };
  Result<Opened> open(const wire::OpenStream& request, const Peer& owner, EventSink* sink);
  Status close(uint64_t stream_id, uint64_t connection_id);
  Status release(uint64_t stream_id, uint64_t sequence, uint64_t connection_id);

  // The connection is gone: reclaims every stream, lease and segment it held.
  void close_all_of(uint64_t connection_id);
  // Daemon shutdown: every running stream fails with `reason`, then all streams are closed.
  void shutdown(const std::string& reason);

  size_t streams_of(uint64_t connection_id) const;
  // Keys of the dataset data open streams read (DatasetRegistry::key), for a reload.
  std::set<std::string> dataset_keys_in_use() const;

  // While draining, OpenStream is refused; running streams continue.
  void set_draining(bool draining) { draining_ = draining; }
  bool draining() const { return draining_; }

  // Worker pool callbacks.
  void on_done(const wire::WorkerDone& done, wire::WorkerTask task);
  void on_lost(std::optional<wire::WorkerTask> task, int64_t culprit, const std::string& cause);
  uint64_t batches_redone() const { return batches_redone_; }

  void fill_status(wire::StatusReply* status) const;

 private:
  struct Entry {
    std::unique_ptr<Stream> stream;
    EventSink* sink;
  };
  void pump();
  void deliver(Entry& entry);
  void fail(Entry& entry, const Error& error);
  void erase(std::map<uint64_t, Entry>::iterator it);

  const Config& config_;
  const DatasetRegistry& datasets_;
  WorkerPool* pool_ = nullptr;
  std::map<uint64_t, Entry> streams_;
  std::deque<wire::WorkerTask> redo_;
  ShmBudget budget_;
  uint64_t next_id_ = 1;
  uint64_t last_served_ = 0;
  uint64_t batches_redone_ = 0;
  bool draining_ = false;
};

}  // namespace batchd::daemon
