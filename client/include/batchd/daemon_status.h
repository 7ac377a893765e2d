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
#include "batchd/status_fields.h"

namespace batchd {

// Time the workers spent per pipeline stage on one stream's batches, summed over `samples` samples.
#define BATCHD_STAGE_TIMES_FIELDS(F)                                                                                  \
  F(uint64_t, read_nanos, read) /* reading the file */                                                                \
  F(uint64_t, decode_nanos, decode) /* JPEG/PNG decode */                                                             \
  F(uint64_t, resize_nanos, resize) /* crop + resize (+ flip decision) */                                             \
  F(uint64_t, normalize_nanos, normalize) /* normalize and write into the slot (the collate) */                       \
  F(uint64_t, samples)                                                                                                \
  /* A pipeline with a cache point: samples served from the cache, computed and kept, computed and not kept. */       \
  F(uint64_t, cache_hits)                                                                                             \
  F(uint64_t, cache_fills)                                                                                            \
  F(uint64_t, cache_uncached)
struct StageTimes {
  BATCHD_STAGE_TIMES_FIELDS(BATCHD_STATUS_MEMBER)
};

// One worker process.
#define BATCHD_WORKER_STATUS_FIELDS(F)                                                                                \
  F(pid_t, pid)                                                                                                       \
  F(std::string, state) /* "idle", "busy", or "down" (its replacement could not be started yet) */                    \
  F(uint64_t, batches_done)                                                                                           \
  F(uint64_t, restarts) /* times this worker slot's process died and was replaced */                                  \
  F(double, busy_seconds) /* time spent making batches since this process started */                                  \
  F(double, alive_seconds) /* since this process started */
struct WorkerStatus {
  BATCHD_WORKER_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

// One subscriber of a shared stream (StreamOptions::share).
#define BATCHD_SUBSCRIBER_STATUS_FIELDS(F)                                                                            \
  F(pid_t, client_pid)                                                                                                \
  F(uid_t, uid)                                                                                                       \
  F(uint64_t, batches_delivered)                                                                                      \
  F(uint64_t, batches_total)                                                                                          \
  F(uint32_t, held) /* batches announced to it and not released (at most its window, the depth) */                    \
  F(uint32_t, lag) /* batches made that wait for it beyond its window (the lag policy: shares.max_lag) */             \
  F(std::string, state) /* "running", "ended" or "failed" */                                                          \
  F(uint64_t, joined_epoch)                                                                                           \
  F(uint64_t, joined_at_batch) /* 0: joined at an epoch start */
struct SubscriberStatus {
  BATCHD_SUBSCRIBER_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

// One open stream, as the daemon accounts it.
#define BATCHD_STREAM_STATUS_FIELDS(F)                                                                                \
  F(uint64_t, stream_id)                                                                                              \
  F(std::string, dataset)                                                                                             \
  F(std::string, pipeline)                                                                                            \
  F(uint32_t, batch_size)                                                                                             \
  F(pid_t, client_pid)                                                                                                \
  F(uint64_t, batches_delivered)                                                                                      \
  F(uint64_t, batches_total) /* wire::kEndlessBatches (2^62, batchd/wire/convert.h) for an endless stream */          \
  F(std::string, state) /* "running", "ended" or "failed" */                                                          \
  F(uint64_t, samples_skipped) /* replaced under OnError::kSkip */                                                    \
  F(uint64_t, worker_deaths) /* workers that died making this stream's batches (each batch was redone) */             \
  F(std::string, on_error) /* "fail" or "skip" */                                                                     \
  F(StageTimes, stages)                                                                                               \
  F(double, open_seconds) /* since OpenStream */                                                                      \
  F(uint64_t, samples_delivered)                                                                                      \
  F(uint64_t, bytes_delivered) /* tensor bytes of the delivered batches */                                            \
  F(double, ahead_seconds) /* every slot held a finished batch: the daemon waited for the client */                   \
  F(double, stall_seconds) /* the client held no batch and none was ready: the client waited for data */              \
  /* Chunks of this stream's batches each worker made, index = worker number (as in workers()); a batch is split */   \
  /* into chunks that several workers fill at once (daemon.min_chunk_us). */                                          \
  F(std::vector<uint64_t>, chunks_by_worker)                                                                          \
  /* A shared production (listed once, whatever the number of subscribers): its share name and subscribers. */        \
  /* batches_delivered / samples_delivered count the batches it made and announced, once each. */                     \
  F(std::string, share)                                                                                               \
  F(std::vector<SubscriberStatus>, subscribers)                                                                       \
  F(uint64_t, batches_made) /* batches the workers made for this stream (remade ones included) */                     \
  F(uint64_t, batches_remade) /* missed batches made again for a late subscriber alone */                             \
  F(uint32_t, max_lag) /* shares.max_lag of a shared production */                                                    \
  /* A stream of a trainer's own Dataset (StreamOptions::external): its name ("python:<class>"), the worker */        \
  /* processes attached to it now (pids as the daemon sees them), and attachments ended by the watchdog or a broken */\
  /* connection. */                                                                                                   \
  F(std::string, external)                                                                                            \
  F(std::vector<WorkerStatus>, attached_workers)                                                                      \
  F(uint64_t, workers_detached)
struct StreamStatus {
  BATCHD_STREAM_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

// One stream's shared-memory segment; slots_free + slots_working + slots_ready + slots_leased = slots.
#define BATCHD_SEGMENT_STATUS_FIELDS(F)                                                                               \
  F(uint64_t, stream_id)                                                                                              \
  F(std::string, name) /* "/dev/shm/batchd.<instance>.<id>" (kFileSystem) or "memfd:batchd.<instance>.<id>" */        \
  F(SharingStrategy, strategy)                                                                                        \
  F(uint64_t, bytes)                                                                                                  \
  F(uint32_t, slots)                                                                                                  \
  F(uint32_t, slots_free)                                                                                             \
  F(uint32_t, slots_working) /* a worker is filling it */                                                             \
  F(uint32_t, slots_ready) /* filled, waiting to be delivered in order */                                             \
  F(uint32_t, slots_leased) /* delivered, not yet released by the client */                                           \
  F(pid_t, owner_pid) /* the client process of the stream */                                                          \
  F(uid_t, owner_uid)                                                                                                 \
  F(double, age_seconds)                                                                                              \
  F(std::string, share) /* a shared production's segment: its share name */                                           \
  F(uint32_t, subscribers) /* and the streams reading it */
struct SegmentStatus {
  BATCHD_SEGMENT_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

// One declared dataset. Daemons on several nodes serve the same data under a name when its fingerprints are equal.
#define BATCHD_DATASET_STATUS_FIELDS(F)                                                                               \
  F(std::string, name)                                                                                                \
  F(std::string, format) /* idx, imagefolder, tokens or webdataset */                                                 \
  F(std::string, state) /* "available", "indexing" or "failed" */                                                     \
  /* available: a summary beyond the size; indexing: "indexing (k of n shards)"; failed: why */                       \
  F(std::string, detail)                                                                                              \
  F(uint64_t, samples) /* available only */                                                                           \
  /* Available only: 32 hex digits computed from the files' names relative to the dataset's root, their sizes and */  \
  /* content (never mtimes or absolute paths), in the background after every open and reload; "" meanwhile or if */   \
  /* that failed. fingerprint_covers says what it read; fingerprint_status is "computing", "ready" or "failed: */     \
  /* why". */                                                                                                         \
  F(std::string, fingerprint)                                                                                         \
  F(std::string, fingerprint_covers)                                                                                  \
  F(std::string, fingerprint_status)                                                                                  \
  F(RemoteShardsStatus, remote) /* remote shards (batchd/remote_status.h); remote.shards == 0 for local data */
struct DatasetStatus {
  BATCHD_DATASET_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

// The whole daemon.
#define BATCHD_DAEMON_STATUS_FIELDS(F)                                                                                \
  F(pid_t, daemon_pid)                                                                                                \
  F(std::string, instance_id) /* this daemon run's id (16 hex digits): its segments are batchd.<instance_id>.* */     \
  F(std::string, version)                                                                                             \
  F(double, uptime_seconds)                                                                                           \
  F(SharingStrategy, default_strategy) /* the daemon's: kFileDescriptor or kFileSystem */                             \
  F(uint32_t, connections)                                                                                            \
  F(std::vector<std::string>, datasets) /* declared in its configuration, one line each ("name (summary)") */         \
  F(std::vector<DatasetStatus>, dataset_entries) /* the same datasets, field by field, with their fingerprints */     \
  F(uint64_t, batches_redone) /* tasks (chunks of batches) given again to a new worker after theirs died */           \
  F(bool, draining) /* new streams are refused (Admin::drain) */                                                      \
  F(std::vector<WorkerStatus>, workers)                                                                               \
  /* an admin's view: every stream; anyone else's: the streams of their own uid */                                    \
  F(std::vector<StreamStatus>, streams)                                                                               \
  F(std::vector<SegmentStatus>, segments) /* the segments of those streams */                                         \
  /* What the view leaves out: other users' streams, only counted (no pid, uid, dataset or segment name of theirs). */\
  F(uint32_t, streams_of_others)                                                                                      \
  F(uint64_t, segment_bytes_of_others)                                                                                \
  /* This connection is an admin's (root, the daemon's user, or a member of the daemon's admin_group): it sees */     \
  /* every stream, and drain() and shutdown() are allowed. */                                                         \
  F(bool, admin)                                                                                                      \
  /* Shared productions, all users' (each one stream above or in streams_of_others), and their subscribers. */        \
  F(uint32_t, shared_streams)                                                                                         \
  F(uint32_t, share_subscribers)                                                                                      \
  /* The daemon's budget for all its segments together (limits.max_shm_bytes, 0 there resolved to half of physical */ \
  /* memory); 0 from a daemon older than this field. Used of it: the segments' bytes + segment_bytes_of_others. */    \
  F(uint64_t, shm_budget_bytes)                                                                                       \
  /* Paging (Admin::status_page): streams this view shows after the page that it does not list, their segments' */    \
  /* bytes, and the after_stream_id of the next page (0: none). Admin::status() gathers every page: all 0 there. */   \
  F(uint32_t, streams_omitted)                                                                                        \
  F(uint64_t, segment_bytes_omitted)                                                                                  \
  F(uint64_t, next_after_stream_id)                                                                                   \
  F(RemoteCacheStatus, remote_cache) /* remote shards' disk cache (batchd/remote_status.h) */                         \
  F(CacheStatus, cache) /* the sample cache: totals for everyone, groups for admins (batchd/cache_status.h) */
struct DaemonStatus {
  BATCHD_DAEMON_STATUS_FIELDS(BATCHD_STATUS_MEMBER)
};

// The daemon's answer to the cheap health question (batchctl health, the Kubernetes probes): nothing about streams.
#define BATCHD_DAEMON_HEALTH_FIELDS(F)                                                                                \
  F(pid_t, daemon_pid)                                                                                                \
  F(std::string, instance_id)                                                                                         \
  F(std::string, version)                                                                                             \
  F(double, uptime_seconds)                                                                                           \
  F(bool, draining) /* new streams are refused: alive, not ready for new work */                                      \
  F(uint32_t, workers) /* worker slots */                                                                             \
  F(uint32_t, workers_down) /* of those, without a process (its replacement could not be started yet) */
struct DaemonHealth {
  BATCHD_DAEMON_HEALTH_FIELDS(BATCHD_STATUS_MEMBER)
};

}  // namespace batchd
