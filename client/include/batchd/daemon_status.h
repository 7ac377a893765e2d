// batchd/daemon_status.h — what a daemon runs, as batchd::Admin (batchd/admin.h) returns it: DaemonStatus (its
// streams, workers, segments, datasets, caches) and DaemonHealth. Plain values, owned by the caller; units in the
// field names (_seconds, _bytes, _nanos); counters count since the stream (or worker process, or daemon) started.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "batchd/cache_status.h"
#include "batchd/remote_status.h"

namespace batchd {

// Time the workers spent per pipeline stage on one stream's batches, summed over `samples` samples.
struct StageTimes {
  uint64_t read_nanos = 0;       // reading the file
  uint64_t decode_nanos = 0;     // JPEG/PNG decode
  uint64_t resize_nanos = 0;     // crop + resize (+ flip decision)
  uint64_t normalize_nanos = 0;  // normalize and write into the slot (the collate)
  uint64_t samples = 0;
  // A pipeline with a cache point: samples served from the cache, computed and kept, computed and not kept.
  uint64_t cache_hits = 0, cache_fills = 0, cache_uncached = 0;
};

// One worker process.
struct WorkerStatus {
  pid_t pid = 0;
  std::string state;          // "idle", "busy", or "down" (its replacement could not be started yet)
  uint64_t batches_done = 0;
  uint64_t restarts = 0;      // times this worker slot's process died and was replaced
  double busy_seconds = 0;    // time spent making batches since this process started
  double alive_seconds = 0;   // since this process started
};

// One subscriber of a shared stream (StreamOptions::share).
struct SubscriberStatus {
  pid_t client_pid = 0;
  uid_t uid = 0;
  uint64_t batches_delivered = 0;
  uint64_t batches_total = 0;
  uint32_t held = 0;            // batches announced to it and not released (at most its window, the depth)
  uint32_t lag = 0;             // batches made that wait for it beyond its window (the lag policy: shares.max_lag)
  std::string state;            // "running", "ended" or "failed"
  uint64_t joined_epoch = 0;
  uint64_t joined_at_batch = 0; // 0: joined at an epoch start
};

// One open stream, as the daemon accounts it.
struct StreamStatus {
  uint64_t stream_id = 0;
  std::string dataset;
  std::string pipeline;
  uint32_t batch_size = 0;
  pid_t client_pid = 0;
  uint64_t batches_delivered = 0;
  uint64_t batches_total = 0;   // wire::kEndlessBatches (2^62, batchd/wire/convert.h) for an endless stream
  std::string state;            // "running", "ended" or "failed"
  uint64_t samples_skipped = 0; // replaced under OnError::kSkip
  uint64_t worker_deaths = 0;   // workers that died making this stream's batches (each batch was redone)
  std::string on_error;         // "fail" or "skip"
  StageTimes stages;
  double open_seconds = 0;      // since OpenStream
  uint64_t samples_delivered = 0;
  uint64_t bytes_delivered = 0; // tensor bytes of the delivered batches
  double ahead_seconds = 0;     // every slot held a finished batch: the daemon waited for the client
  double stall_seconds = 0;     // the client held no batch and none was ready: the client waited for data
  // Chunks of this stream's batches each worker made, index = worker number (as in workers()); a batch is split
  // into chunks that several workers fill at once (daemon.min_chunk_us).
  std::vector<uint64_t> chunks_by_worker;
  // A shared production (listed once, whatever the number of subscribers): its share name and subscribers.
  // batches_delivered / samples_delivered count the batches it made and announced, once each.
  std::string share;
  std::vector<SubscriberStatus> subscribers;
  uint64_t batches_made = 0;    // batches the workers made for this stream (remade ones included)
  uint64_t batches_remade = 0;  // missed batches made again for a late subscriber alone
  uint32_t max_lag = 0;         // shares.max_lag of a shared production
  // A stream of a trainer's own Dataset (StreamOptions::external): its name ("python:<class>"), the worker
  // processes attached to it now (pids as the daemon sees them), and attachments ended by the watchdog or a
  // broken connection.
  std::string external;
  std::vector<WorkerStatus> attached_workers;
  uint64_t workers_detached = 0;
};

// One stream's shared-memory segment; slots_free + slots_working + slots_ready + slots_leased = slots.
struct SegmentStatus {
  uint64_t stream_id = 0;
  std::string name;             // "/dev/shm/batchd.<instance>.<id>" (kFileSystem) or "memfd:batchd.<instance>.<id>"
  SharingStrategy strategy = SharingStrategy::kDefault;
  uint64_t bytes = 0;
  uint32_t slots = 0;
  uint32_t slots_free = 0;
  uint32_t slots_working = 0;   // a worker is filling it
  uint32_t slots_ready = 0;     // filled, waiting to be delivered in order
  uint32_t slots_leased = 0;    // delivered, not yet released by the client
  pid_t owner_pid = 0;          // the client process of the stream
  uid_t owner_uid = 0;
  double age_seconds = 0;
  std::string share;            // a shared production's segment: its share name
  uint32_t subscribers = 0;     // and the streams reading it
};

// One declared dataset. Daemons on several nodes serve the same data under a name when its fingerprints are equal.
struct DatasetStatus {
  std::string name;
  std::string format;       // idx, imagefolder, tokens or webdataset
  std::string state;        // "available", "indexing" or "failed"
  std::string detail;       // available: a summary beyond the size; indexing: "indexing (k of n shards)"; failed: why
  uint64_t samples = 0;     // available only
  // Available only: 32 hex digits computed from the files' names relative to the dataset's root, their sizes and
  // content (never mtimes or absolute paths), in the background after every open and reload; "" meanwhile or if
  // that failed. fingerprint_covers says what it read; fingerprint_status is "computing", "ready" or "failed: why".
  std::string fingerprint;
  std::string fingerprint_covers;
  std::string fingerprint_status;
  RemoteShardsStatus remote;  // remote shards (batchd/remote_status.h); remote.shards == 0 for local data
};

// The whole daemon.
struct DaemonStatus {
  pid_t daemon_pid = 0;
  std::string instance_id;            // this daemon run's id (16 hex digits): its segments are batchd.<instance_id>.*
  std::string version;
  double uptime_seconds = 0;
  SharingStrategy default_strategy = SharingStrategy::kDefault;  // the daemon's: kFileDescriptor or kFileSystem
  uint32_t connections = 0;
  std::vector<std::string> datasets;  // declared in its configuration, one line each ("name (summary)")
  std::vector<DatasetStatus> dataset_entries;  // the same datasets, field by field, with their fingerprints
  uint64_t batches_redone = 0;        // tasks (chunks of batches) given again to a new worker after theirs died
  bool draining = false;              // new streams are refused (Admin::drain)
  std::vector<WorkerStatus> workers;
  std::vector<StreamStatus> streams;  // an admin's view: every stream; anyone else's: the streams of their own uid
  std::vector<SegmentStatus> segments;  // the segments of those streams
  // What the view leaves out: other users' streams, only counted (no pid, uid, dataset or segment name of theirs).
  uint32_t streams_of_others = 0;
  uint64_t segment_bytes_of_others = 0;
  // This connection is an admin's (root, the daemon's user, or a member of the daemon's admin_group): it sees every
  // stream, and drain() and shutdown() are allowed.
  bool admin = false;
  // Shared productions, all users' (each one stream above or in streams_of_others), and their subscribers.
  uint32_t shared_streams = 0;
  uint32_t share_subscribers = 0;
  // The daemon's budget for all its segments together (limits.max_shm_bytes, 0 there resolved to half of physical
  // memory); 0 from a daemon older than this field. Used of it: the segments' bytes + segment_bytes_of_others.
  uint64_t shm_budget_bytes = 0;
  // Paging (Admin::status_page): streams this view shows after the page that it does not list, their segments'
  // bytes, and the after_stream_id of the next page (0: none). Admin::status() gathers every page: all 0 there.
  uint32_t streams_omitted = 0;
  uint64_t segment_bytes_omitted = 0;
  uint64_t next_after_stream_id = 0;
  RemoteCacheStatus remote_cache;  // remote shards' disk cache (batchd/remote_status.h)
  CacheStatus cache;  // the sample cache: totals for everyone, groups for admins (batchd/cache_status.h)
};

// The daemon's answer to the cheap health question (batchctl health, the Kubernetes probes): nothing about streams.
struct DaemonHealth {
  pid_t daemon_pid = 0;
  std::string instance_id;
  std::string version;
  double uptime_seconds = 0;
  bool draining = false;      // new streams are refused: alive, not ready for new work
  uint32_t workers = 0;       // worker slots
  uint32_t workers_down = 0;  // of those, without a process (its replacement could not be started yet)
};

}  // namespace batchd
