// batchd/admin.h — administering a batchd daemon: what it runs (status, streams, workers, segments), drain and
// shutdown, and the /dev/shm report. What batchctl, batchd-bench --stages and the tests are built on.
//
//   auto admin = batchd::Admin::connect();              // "" = $BATCHD_SOCKET, else /run/batchd/batchd.sock
//   if (!admin.ok()) { std::cerr << admin.error().message(); ... }
//   auto status = admin->status();                      // Result<DaemonStatus>
//   for (const batchd::StreamStatus& s : status->streams) std::cout << s.dataset << " " << s.samples_delivered;
//   batchd::ShmReport shm = batchd::shm_report({});     // works with the daemon down
//
// Every call is one request to the daemon and returns a snapshot: plain values, owned by the caller, valid
// forever. Units are in the field names (_seconds, _bytes, _nanos); counters count since the stream (or worker
// process, or daemon) started. Strings the daemon fills in (worker and stream state, on_error) are as documented
// per field; new values may appear in later versions.
//
// Errors: Result/Status as in batchd/client.h; no exception leaves this library. connect() fails as
// Client::connect does (kUnavailable: no daemon listening, with the socket path and how to start one; kIo:
// permission); a request fails with kUnavailable when the connection broke (daemon stopped) or the daemon did not
// answer within the request timeout (ConnectOptions::request_timeout, $BATCHD_TIMEOUT: 30 s by default).
//
// Thread-safety: an Admin may be used from several threads (requests are serialized on its connection).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "batchd/cache_status.h"
#include "batchd/remote_status.h"
#include "batchd/client.h"
#include "batchd/result.h"

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

// A connection for administration. Move-only; holds one socket.
class Admin {
 public:
  // Connects to `socket_path`; "" means $BATCHD_SOCKET, else /run/batchd/batchd.sock. Errors as Client::connect;
  // deadlines and the expected owner as there (ConnectOptions).
  static Result<Admin> connect(const std::string& socket_path = "");
  static Result<Admin> connect(const ConnectOptions& options);

  Admin(Admin&&) noexcept;
  Admin& operator=(Admin&&) noexcept;
  ~Admin();

  const std::string& socket_path() const;
  // Who serves the socket (read once, at connect; Client::daemon_credentials).
  const DaemonCredentials& daemon_credentials() const;

  // Everything: every page of the status (status_page), gathered. One request, one snapshot, unless the streams
  // this view shows do not fit in one reply (more than about 2,500 with the default limits.max_frame_bytes): then
  // each page is a snapshot of its own streams, and the totals are the last page's.
  Result<DaemonStatus> status();
  // One page: the streams with ids above `after_stream_id`, as many as fit in one reply (docs/protocol.md, "Status
  // pages"); next_after_stream_id says where the next page starts.
  // cache_groups: an admin's reply also has the sample cache's groups (cache.groups; a scan of its whole index).
  Result<DaemonStatus> status_page(uint64_t after_stream_id, bool cache_groups = false);
  // Whether the daemon answers, and whether it takes new streams: one small request, whatever the number of streams
  // (for anyone who can connect).
  Result<DaemonHealth> health();
  // Parts of status(), each one request.
  Result<std::vector<StreamStatus>> streams();
  Result<std::vector<WorkerStatus>> workers();
  Result<std::vector<SegmentStatus>> segments();

  // Admin requests: from anyone but root, the daemon's user and members of its admin_group they fail with
  // kPermissionDenied, saying who may send them (DaemonStatus::admin tells beforehand).
  // Refuse new streams from now on; running streams continue. Returns the daemon's acknowledgement (one line).
  Result<std::string> drain();
  // Drain and exit, as SIGTERM does: running streams end with "daemon shutting down". Returns the daemon's
  // acknowledgement, sent before it starts to drain; the connection closes when the daemon exits.
  Result<std::string> shutdown();
  // Drops the sample cache's ready entries of every load of `dataset` ("" = all): memory back to the host, the
  // samples computed again when next read.
  Result<CacheDropped> drop_cache(const std::string& dataset);

 private:
  explicit Admin(std::shared_ptr<detail::ClientCore> core);
  std::shared_ptr<detail::ClientCore> core_;
};

// ---------------------------------------------------------------- /dev/shm report (batchctl shm)

// A file in the shm directory that no live daemon owns.
struct ShmFile {
  std::string name;          // without the directory
  uint64_t bytes = 0;
  double age_seconds = 0;    // since its last modification
  pid_t daemon_pid = 0;      // legacy batchd.<pid>.<id> files: the older daemon that made it; 0 otherwise
  bool in_use = false;       // some process this user can see has it open or mapped
  std::string instance_id;   // batchd.<instance>.* files: the daemon run that made it
  uid_t owner_uid = 0;
  std::string kept;          // with gc: why it was not removed; held and undecided files: why they stay
  pid_t lock_holder_pid = 0; // held files: the holder of their instance lock as /proc/locks gives it; 0 if not visible
  std::string lock_holder;   // held files: that process's name (/proc/<pid>/comm); "" if not readable
};

// A client process holding live segments.
struct ShmClient {
  pid_t pid = 0;
  int32_t segment_fds = 0;       // fds it holds on batchd segments; -1 if its /proc is unreadable
  int32_t segment_mappings = 0;  // distinct batchd segments it has mapped (a batchd client keeps no fd open)
};

struct ShmReport {
  bool daemon_reachable = false;
  std::string daemon_error;            // why not, when not (the connect or status error's message)
  pid_t daemon_pid = 0;
  std::string instance_id;             // the daemon's (DaemonStatus::instance_id)
  std::vector<SegmentStatus> segments; // the daemon's live segments
  std::vector<ShmClient> clients;      // the owners of those segments
  // Files no live daemon owns (not listed when removed): segments and lock files of batchd instances that are
  // provably gone; legacy batchd.<pid>.<id> names of older versions; batchd.<instance>.* whose instance lock cannot
  // be probed; everything else (torch_*, sem.*, other programs' files).
  std::vector<ShmFile> orphans;
  std::vector<ShmFile> legacy;
  std::vector<ShmFile> undecided;
  std::vector<ShmFile> foreign;
  // batchd.<instance>.* of instances other than the reachable daemon's (all, when none is reachable) whose lock some
  // process holds: another daemon running, or a process keeping a dead instance's lock, whose segments nothing
  // collects while it does. Never removed; kept says who holds the lock.
  std::vector<ShmFile> held;
  // A daemon accepted the connection but its live segments could not be had (daemon_error says why): they are
  // missing from `segments` (batchctl shm exits 1).
  bool segments_missing = false;
  std::vector<std::string> removed;    // names removed by ShmReportOptions::gc
  uint64_t shm_total_bytes = 0;        // of the filesystem holding shm_dir; 0 if statvfs failed
  uint64_t shm_free_bytes = 0;
};

struct ShmReportOptions {
  std::string socket_path;            // the daemon to ask ("" as Admin::connect); unreachable is not an error
  std::optional<std::chrono::milliseconds> request_timeout;  // for asking it (ConnectOptions::request_timeout)
  std::string shm_dir = "/dev/shm";   // where POSIX shared memory lives
  bool gc = false;                    // remove the orphans and the legacy files that no process uses
  bool include_foreign = false;       // with gc: also remove torch_* files that no process has open or mapped
};

// Scans shm_dir (and /proc, for who holds what) and asks the daemon for its live segments when it answers.
// Removes files only with gc, under the rule of batchd/wire/shm_scan.h (gc_decision): never a file that a process
// this user can see has open or mapped, never a live instance's, and, for a caller other than root, only files it
// owns. A file gc considered and kept stays listed with ShmFile::kept saying why. Never fails: what could not be
// read is missing from the report (daemon_error says why the daemon's part is).
ShmReport shm_report(const ShmReportOptions& options);

// ---------------------------------------------------------------- JSON

// One JSON object (protobuf's canonical mapping of proto/batchd.proto's StatusReply / ShmReport: field names as
// in the .proto, 64-bit integers as strings, strategies as FILE_DESCRIPTOR / FILE_SYSTEM / STRATEGY_DEFAULT,
// every field present): what `batchctl ... --json` prints. Errors: kInternal if the encoder fails.
Result<std::string> to_json(const DaemonStatus& status);
Result<std::string> to_json(const ShmReport& report);

}  // namespace batchd
