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

#include "batchd/client.h"
#include "batchd/daemon_status.h"
#include "batchd/result.h"
#include "batchd/status_fields.h"

namespace batchd {

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
#define BATCHD_SHM_FILE_FIELDS(F)                                                                                     \
  F(std::string, name) /* without the directory */                                                                    \
  F(uint64_t, bytes)                                                                                                  \
  F(double, age_seconds) /* since its last modification */                                                            \
  F(pid_t, daemon_pid) /* legacy batchd.<pid>.<id> files: the older daemon that made it; 0 otherwise */               \
  F(bool, in_use) /* some process this user can see has it open or mapped */                                          \
  F(std::string, instance_id) /* batchd.<instance>.* files: the daemon run that made it */                            \
  F(uid_t, owner_uid)                                                                                                 \
  F(std::string, kept) /* with gc: why it was not removed; held and undecided files: why they stay */                 \
  /* held files: the holder of their instance lock as /proc/locks gives it; 0 if not visible */                       \
  F(pid_t, lock_holder_pid)                                                                                           \
  F(std::string, lock_holder) /* held files: that process's name (/proc/<pid>/comm); "" if not readable */
struct ShmFile {
  BATCHD_SHM_FILE_FIELDS(BATCHD_STATUS_MEMBER)
};

// A client process holding live segments.
#define BATCHD_SHM_CLIENT_FIELDS(F)                                                                                   \
  F(pid_t, pid)                                                                                                       \
  F(int32_t, segment_fds) /* fds it holds on batchd segments; -1 if its /proc is unreadable */                        \
  F(int32_t, segment_mappings) /* distinct batchd segments it has mapped (a batchd client keeps no fd open) */
struct ShmClient {
  BATCHD_SHM_CLIENT_FIELDS(BATCHD_STATUS_MEMBER)
};

#define BATCHD_SHM_REPORT_FIELDS(F)                                                                                   \
  F(bool, daemon_reachable)                                                                                           \
  F(std::string, daemon_error) /* why not, when not (the connect or status error's message) */                        \
  F(pid_t, daemon_pid)                                                                                                \
  F(std::string, instance_id) /* the daemon's (DaemonStatus::instance_id) */                                          \
  F(std::vector<SegmentStatus>, segments) /* the daemon's live segments */                                            \
  F(std::vector<ShmClient>, clients) /* the owners of those segments */                                               \
  /* Files no live daemon owns (not listed when removed): segments and lock files of batchd instances that are */     \
  /* provably gone; legacy batchd.<pid>.<id> names of older versions; batchd.<instance>.* whose instance lock */      \
  /* cannot be probed; everything else (torch_*, sem.*, other programs' files). */                                    \
  F(std::vector<ShmFile>, orphans)                                                                                    \
  F(std::vector<ShmFile>, legacy)                                                                                     \
  F(std::vector<ShmFile>, undecided)                                                                                  \
  F(std::vector<ShmFile>, foreign)                                                                                    \
  /* batchd.<instance>.* of instances other than the reachable daemon's (all, when none is reachable) whose lock */   \
  /* some process holds: another daemon running, or a process keeping a dead instance's lock, whose segments */       \
  /* nothing collects while it does. Never removed; kept says who holds the lock. */                                  \
  F(std::vector<ShmFile>, held)                                                                                       \
  /* A daemon accepted the connection but its live segments could not be had (daemon_error says why): they are */     \
  /* missing from `segments` (batchctl shm exits 1). */                                                               \
  F(bool, segments_missing)                                                                                           \
  F(std::vector<std::string>, removed) /* names removed by ShmReportOptions::gc */                                    \
  F(uint64_t, shm_total_bytes) /* of the filesystem holding shm_dir; 0 if statvfs failed */                           \
  F(uint64_t, shm_free_bytes)
struct ShmReport {
  BATCHD_SHM_REPORT_FIELDS(BATCHD_STATUS_MEMBER)
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

// One JSON object (protobuf's canonical mapping of proto/batchd_admin.proto's StatusReply / batchd_local.proto's
// ShmReport: field names as in the .proto, 64-bit integers as strings, strategies as FILE_DESCRIPTOR / FILE_SYSTEM /
// STRATEGY_DEFAULT, every field present): what `batchctl ... --json` prints. Errors: kInternal if the encoder fails.
Result<std::string> to_json(const DaemonStatus& status);
Result<std::string> to_json(const ShmReport& report);

}  // namespace batchd
