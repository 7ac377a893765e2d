// stream_manager.h — opens and closes streams, turns worker events into stream events, and delivers batches.
//
// open() is plan() (validation, pipeline options, layout: plan.h), then the segment pool (admission, creation, the
// client uid's access: segment_pool.h), then a Stream registered with the Scheduler (scheduler.h), which hands its tasks to the
// Workers. As the WorkerEvents of the pool it applies each stream's error policy to lost tasks and bad samples
// and sends BatchReady / StreamEnd / StreamFailed to the owning connection's EventSink, in order.
//
// Shared streams (OpenStream.share, share.h): the first OpenStream of a share name creates a production (a Stream
// with its segment, listed under its own stream id) and a Share; later ones join it after Share::check_join. Every
// subscriber uses the production's stream id on its own connection; closing, releasing and disconnecting act on
// that connection's subscription; the production and its segment go when the last subscriber leaves.
//
// Not thread-safe: everything runs on the daemon's io_context thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>

#include "config.h"
#include "data/dataset.h"
#include "streams/plan.h"
#include "streams/scheduler.h"
#include "streams/segment_pool.h"
#include "streams/share.h"
#include "streams/stream.h"
#include "workers/workers.h"

namespace batchd::daemon {

// Where a connection receives its streams' events.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void send_event(const wire::Reply& event) = 0;
};

// Whose streams a status shows in full (server/authorization.h decides): an admin's view shows every stream; a
// non-admin's shows their own uid's streams and segments and only counts the others' (StatusReply
// streams_of_others, segment_bytes_of_others); the metrics endpoint's, nobody's.
struct StatusView {
  static StatusView everything() { return {true, std::nullopt}; }
  static StatusView own(uint32_t uid) { return {false, uid}; }
  static StatusView none() { return {false, std::nullopt}; }
  bool shows(uint32_t owner_uid) const { return all || (uid && *uid == owner_uid); }

  bool all = false;
  std::optional<uint32_t> uid;
};

class StreamManager final : public WorkerEvents {
 public:
  // `workers` must outlive the manager; the manager must be the pool's WorkerEvents before any event arrives.
  // `instance` (this daemon's identity in /dev/shm) goes to the segment pool, which releases it after the last
  // segment.
  StreamManager(const Config& config, const DatasetRegistry& datasets, Workers& workers, SegmentInstance instance);

  struct Opened {
    wire::StreamOpened reply;
    wire::UniqueFd client_fd;  // FILE_DESCRIPTOR: the segment's fd for the client (read-write only if it asked)
  };
  // Plans the stream (a dry run stops there), creates its segment and starts scheduling its batches.
  Result<Opened> open(const wire::OpenStream& request, const Peer& owner, EventSink* sink);
  // The StreamOpened reply of `stream_id` is sent: a shared stream's subscriber may get the batches it joined at
  // now (events for a stream must follow its reply).
  void after_opened(uint64_t stream_id);
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

  // WorkerEvents.
  void on_task_done(size_t w, const wire::WorkerDone& done, Task task) override;
  void on_task_lost(size_t w, Task task, const TaskLoss& loss) override;
  void on_worker_ready(size_t w) override { scheduler_.pump(); }

  uint64_t batches_redone() const { return batches_redone_; }
  uint64_t shm_bytes_in_use() const { return segments_.bytes_in_use(); }
  // Workers, streams and segments (those `view` shows; the others counted), batches_redone, draining, instance_id.
  void fill_status(wire::StatusReply* status, const StatusView& view) const;

 private:
  struct Entry {
    std::unique_ptr<Stream> stream;
    EventSink* sink;               // a private stream's connection (null for a shared production)
    std::unique_ptr<Share> share;  // a shared production's subscribers (null for a private stream)
  };
  Result<Opened> open_shared(const wire::OpenStream& request, const Peer& owner, EventSink* sink);
  Result<Opened> join_share(Entry& entry, const wire::OpenStream& request, const Peer& owner, EventSink* sink,
                            bool is_creator);
  // Starts scheduling a stream made from `planned` (its segment already created).
  Entry& add_stream(StreamPlan planned, Segment segment, const Peer& owner, EventSink* sink);
  // The subscriber on `connection_id` leaves the share of `it`; the production is erased after the last.
  void leave_share(std::map<uint64_t, Entry>::iterator it, uint64_t connection_id);
  PlanContext plan_context(uint64_t connection_id) const;
  // A redo from the stream's error policy: queued first, or the stream fails at that batch.
  void redo_or_fail(Entry& entry, uint64_t sequence, Result<Task> redo);
  void deliver(Entry& entry);
  void fail(Entry& entry, const Error& error);
  void erase(std::map<uint64_t, Entry>::iterator it);

  const Config& config_;
  const DatasetRegistry& datasets_;
  SegmentPool segments_;  // before streams_: outlives every Segment
  Scheduler scheduler_;
  std::map<uint64_t, Entry> streams_;
  std::map<std::string, uint64_t> shares_;  // share name -> its production's stream id
  uint64_t batches_redone_ = 0;
  bool draining_ = false;
};

}  // namespace batchd::daemon
