// stream_manager.h — opens and closes streams, turns worker events into stream events, and delivers batches.
//
// open() is plan() (validation, pipeline options, layout: plan.h), then the segment pool (admission, creation, the
// client uid's access: segment_pool.h), then a Stream registered with the Scheduler (scheduler.h), which hands its tasks to the
// Workers. As the WorkerEvents of the pool it applies each stream's error policy to lost tasks and bad samples
// and sends BatchReady / StreamEnd / StreamFailed to the owning connection's EventSink, in order.
//
// Shared streams (OpenStream.share, share.h): the first OpenStream of a share name by a uid creates a production (a
// Stream with its segment, listed under its own stream id) and a Share; later ones of that uid join it after
// Share::check_join. Names are per uid: another uid's OpenStream of the same name creates its own production, so
// no answer tells a uid whether another uid uses a name (admins included). Every
// subscriber uses the production's stream id on its own connection; closing, releasing and disconnecting act on
// that connection's subscription; the production and its segment go when the last subscriber leaves.
//
// External streams (OpenStream.external: a trainer's own Python Dataset): the stream has its own pool of attached
// workers (workers/attached_workers.h), processes of the owner's uid that attach over their own connections
// (attach_worker); the Scheduler gives its tasks to them alone. Their done and gone events arrive through the
// connection (worker_done, close_all_of) and come back as the same WorkerEvents as the forked workers'.
//
// Not thread-safe: everything runs on the daemon's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "cache/cache_ledger.h"
#include "cache/sample_cache.h"
#include "streams/stream_settings.h"
#include "data/dataset.h"
#include "streams/plan.h"
#include "streams/scheduler.h"
#include "streams/segment_pool.h"
#include "streams/share.h"
#include "streams/status_page.h"
#include "streams/stream.h"
#include "workers/attached_workers.h"
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
  bool cache_groups = false;  // an admin asked for the sample cache's groups (StatusRequest.cache_groups)
};

class StreamManager final : public WorkerEvents {
 public:
  // `workers` must outlive the manager; the manager must be the pool's WorkerEvents before any event arrives.
  // `instance` (this daemon's identity in /dev/shm) goes to the segment pool, which releases it after the last
  // segment.
  // `io` runs the attached workers' watchdogs; without it (unit tests) AttachWorker is refused. `cache`: the
  // daemon's sample cache (null: none), which must outlive the manager. `config` (the daemon's Config, which
  // derives from StreamSettings) must outlive it too: its pipelines are read at each OpenStream (SIGHUP replaces
  // them).
  StreamManager(const StreamSettings& config, const DatasetRegistry& datasets, Workers& workers,
                SegmentInstance instance, boost::asio::io_context* io = nullptr, SampleCache* cache = nullptr);

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

  // AttachWorker: `peer` (its connection `link`) becomes a worker of external stream `stream_id`. kNotFound for a
  // stream that does not exist or is another uid's (the same answer: no uid learns of another's streams);
  // kInvalidArgument for a stream that is not external or not running; kResourceExhausted past
  // limits.max_attached_workers. The reply's WorkerAttach, a read-write fd of the segment and the worker's progress
  // page fd come back to send.
  struct WorkerAttachment {
    wire::WorkerAttached reply;
    wire::UniqueFd segment_fd, progress_fd;
  };
  // worker: AttachWorker.worker (a round-robin stream's worker number; ignored by the others).
  Result<WorkerAttachment> attach_worker(uint64_t stream_id, const Peer& peer, WorkerLink* link, uint32_t worker = 0);
  // The WorkerAttached reply and the progress page are sent: the new worker may get its first task now (a task
  // must follow them, and nothing else would give one to a stream's first workers).
  void after_worker_attached() { scheduler_.pump(); }
  // Hands tasks to idle workers (a remote shard arrived: remote/shard_store.h's on_change).
  void pump() { scheduler_.pump(); }
  // The attached worker on `connection_id` answered its task (a mismatch detaches it: attached_workers.h).
  void worker_done(uint64_t connection_id, uint64_t stream_id, const wire::WorkerDone& done);

  // The connection is gone: reclaims every stream, lease and segment it held; an attached worker's task is redone.
  void close_all_of(uint64_t connection_id);
  // Daemon shutdown: every running stream fails with `reason`, then all streams are closed.
  void shutdown(const std::string& reason);

  size_t streams_of(uint64_t connection_id) const;
  // Private streams and share subscriptions of `uid`, on all its connections (limits.max_streams_per_uid).
  size_t streams_of_uid(uint32_t uid) const;
  // Keys of the dataset data open streams read (DatasetRegistry::key), for a reload.
  std::set<std::string> dataset_keys_in_use() const;

  // While draining, OpenStream is refused; running streams continue.
  void set_draining(bool draining) { draining_ = draining; }
  // batchctl cache --drop [DATASET]: the sample cache's ready entries of every load of `dataset` ("" = all);
  // returns (entries, bytes) dropped.
  std::pair<uint64_t, uint64_t> drop_cache(const std::string& dataset) { return cache_.drop(dataset); }
  // After a reload (or a background open installed): drops the cache entries of dataset loads that are no longer
  // current (their keys can never be hit again). Returns the bytes dropped.
  uint64_t drop_stale_cache() {
    return cache_.drop_stale([this](const std::string& key) {
      return datasets_.key(key.substr(0, key.rfind('#'))) == key;
    });
  }
  bool draining() const { return draining_; }

  // WorkerEvents.
  void on_task_done(size_t w, const wire::WorkerDone& done, Task task) override;
  void on_task_lost(size_t w, Task task, const TaskLoss& loss) override;
  void on_worker_ready(size_t w) override { scheduler_.pump(); }

  // Every share's lag policy looks again now (the timer of recheck_shares_at; unit tests, after moving their clock).
  void recheck_shares();
  // The daemon drains: the lag timer must not keep its event loop alive (the shares end with their connections).
  void cancel_timers() {
    timers_cancelled_ = true;
    if (lag_timer_) lag_timer_->cancel();
  }
  // The clock of the shares' lag policy (share.h Timing::now): unit tests move their own.
  void set_clock(std::function<Share::Clock::time_point()> now) { clock_ = std::move(now); }

  uint64_t batches_redone() const { return batches_redone_; }
  uint64_t shm_bytes_in_use() const { return segments_.bytes_in_use(); }
  // Workers, streams and segments (those `view` shows, in `page`; the others counted), batches_redone, draining,
  // instance_id. The rest of `status` must be filled before: the page's bound counts it (status_page.h).
  void fill_status(wire::StatusReply* status, const StatusView& view, const StatusPage& page = {}) const;
  // Worker slots (and those down), draining, instance_id: nothing about any stream.
  void fill_health(wire::HealthReply* health) const;

 private:
  struct Entry {
    std::unique_ptr<Stream> stream;
    EventSink* sink;               // a private stream's connection (null for a shared production)
    std::unique_ptr<Share> share;  // a shared production's subscribers (null for a private stream)
    std::unique_ptr<AttachedWorkers> attached;  // an external stream's own workers (null otherwise)
  };
  Result<Opened> open_shared(const wire::OpenStream& request, const Peer& owner, EventSink* sink);
  Result<Opened> join_share(Entry& entry, const wire::OpenStream& request, const Peer& owner, EventSink* sink,
                            bool is_creator);
  // Starts scheduling a stream made from `planned` (its segment already created).
  Entry& add_stream(StreamPlan planned, Segment segment, const Peer& owner, EventSink* sink);
  // A stream whose spec has a cache point: registered with the cache ledger (batchctl cache's groups).
  void note_cache_point(uint64_t id, const wire::WorkerAttach& attach, uint64_t samples);
  // stream_manager_remote.cc: remote shards (the stream waits for, and fetches ahead, its shards), and the failure of a
  // stream whose task was refused at hand-out, delivered after each pump (Scheduler::set_after_pump).
  void attach_remote_reads(Stream& stream);
  void deliver_refused();
  // The subscriber on `connection_id` leaves the share of `it`; the production is erased after the last.
  void leave_share(std::map<uint64_t, Entry>::iterator it, uint64_t connection_id);
  // The lag policy of every share looks again at `at` (a subscriber's grace ends then: share.h).
  void recheck_shares_at(Share::Clock::time_point at);
  PlanContext plan_context(const Peer& owner) const;
  // A redo from the stream's error policy: queued first, or the stream fails at that batch.
  void redo_or_fail(Entry& entry, uint64_t sequence, Result<Task> redo);
  void deliver(Entry& entry);
  void fail(Entry& entry, const Error& error);
  void erase(std::map<uint64_t, Entry>::iterator it);

  const StreamSettings& config_;
  boost::asio::io_context* io_;
  const DatasetRegistry& datasets_;
  CacheLedger cache_;
  SegmentPool segments_;  // before streams_: outlives every Segment
  Scheduler scheduler_;
  std::map<uint64_t, Entry> streams_;
  std::map<std::pair<uint32_t, std::string>, uint64_t> shares_;  // (creator uid, share name) -> production's id
  uint64_t batches_redone_ = 0;
  bool draining_ = false;
  std::function<Share::Clock::time_point()> clock_;
  std::unique_ptr<boost::asio::steady_timer> lag_timer_;  // recheck_shares_at (made at its first use)
  bool lag_timer_armed_ = false;
  bool timers_cancelled_ = false;
};

}  // namespace batchd::daemon
