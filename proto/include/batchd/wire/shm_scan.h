// shm_scan.h — what lies in /dev/shm, seen from outside any daemon: segments of live batchd instances, orphans of
// gone ones, leftovers of older batchd versions, foreign files; who holds them; how full the filesystem is; and the
// one rule that decides what garbage collection may remove.
//
// Names. Each daemon run is an instance with a fresh id of 16 hex digits (getrandom: unique across restarts and pid
// namespaces). It holds an exclusive flock on <dir>/batchd.<instance>.lock for its whole life and names its
// segments batchd.<instance>.<stream-id> (file_system names and memfd names alike). The lock file appears already
// locked (daemon/streams/segment_instance.h), before the instance's first segment, and is removed after its last.
// So an instance is provably gone when its lock can be taken (flock LOCK_EX|LOCK_NB on an O_RDONLY fd: the kernel
// drops a lock when its holder dies, however it dies; this works from any pid namespace that shares the directory)
// or when its lock file is missing. Nothing here looks at process names, and no pid decides anything.
// batchd.<pid>.<stream-id> are names of batchd versions before instance ids ("legacy"): nothing proves their
// daemon gone, so only the in-use proof (below) can free them, and only when asked (GcPolicy::include_legacy).
//
// Garbage collection (gc_decision) never removes a file that a process this caller can see has open or mapped
// (mark_in_use, from /proc/*/fd and /proc/*/maps), nor one it cannot prove unused: a caller other than root cannot
// see other users' processes, so it may only remove files it owns (st_uid == its euid). Candidates are orphans
// (segments and lock files of gone instances), legacy names (include_legacy) and PyTorch's torch_* leftovers
// (include_foreign); everything else is ignored. Limit: processes in other pid namespaces are invisible even to
// root, which matters for legacy and torch_* files only (instance segments are protected by their lock).
//
// Used by the daemon at start-up (daemon/streams/orphan_segments.h) and by the client's shm report (batchd/admin.h,
// behind `batchctl shm`). Only collect_garbage() removes anything. Plain functions of the file system and /proc:
// safe from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace batchd::wire {

inline constexpr size_t kInstanceIdChars = 16;  // lowercase hex

// A name in the shm directory, parsed.
struct ShmName {
  enum class Kind { kSegment, kInstanceLock, kLegacySegment, kOther };
  Kind kind = Kind::kOther;
  std::string instance;    // kSegment, kInstanceLock: the 16 hex digits
  pid_t legacy_pid = 0;    // kLegacySegment: the pid an older batchd put in the name
  uint64_t stream_id = 0;  // kSegment, kLegacySegment
};
// batchd.<instance>.<stream-id>, batchd.<instance>.lock, batchd.<pid>.<stream-id>; anything else is kOther.
ShmName parse_shm_name(std::string_view name);
bool is_instance_id(std::string_view text);
std::string segment_name(const std::string& instance, uint64_t stream_id);  // "batchd.<instance>.<id>"
std::string instance_lock_name(const std::string& instance);                // "batchd.<instance>.lock"

// True for PyTorch's file_system strategy names (torch_<pid>_<random>): the foreign leftovers that
// `batchctl shm --gc --include-foreign` may remove.
bool is_torch_leftover(const std::string& name);

enum class InstanceState { kLive, kGone, kUndecided };
// Probes <dir>/batchd.<instance>.lock as described above: kLive while its holder runs; kGone once the lock can be
// taken or the file is missing; kUndecided (with `why`) when the file exists but cannot be opened or locked.
InstanceState probe_instance(const std::string& dir, const std::string& instance, std::string* why = nullptr);

struct ShmEntry {
  // kLive: of a running instance. kOrphan: of a gone instance. kLegacy: batchd.<pid>.<id>. kUndecided: an instance
  // whose lock cannot be probed (`note` says why). kForeign: not batchd's.
  enum class Kind { kLive, kOrphan, kLegacy, kUndecided, kForeign };
  std::string name;  // without the directory
  Kind kind = Kind::kForeign;
  bool lock_file = false;   // batchd.<instance>.lock rather than a segment
  std::string instance;     // batchd.<instance>.* names
  pid_t legacy_pid = 0;     // batchd.<pid>.<id> names
  uint64_t bytes = 0;
  double age_seconds = 0;   // since last modification
  uid_t owner_uid = 0;      // st_uid
  bool in_use = false;      // open or mapped by some process this caller can see (filled by mark_in_use)
  std::string note;         // kUndecided: why; after collect_garbage: why it was kept
};

// Every regular file in `dir`, classified (each instance's lock probed once). An unreadable `dir` gives an empty
// list.
std::vector<ShmEntry> scan_shm(const std::string& dir = "/dev/shm");

// Sets in_use for entries that some process has open or mapped (from /proc/*/fd and /proc/*/maps). Processes whose
// /proc this caller cannot read (other users', for a caller other than root) are not seen.
void mark_in_use(std::vector<ShmEntry>& entries, const std::string& dir = "/dev/shm");

struct GcPolicy {
  uid_t euid = 0;                // the caller's effective uid: root (0) may remove any file, others only their own
  bool include_legacy = false;   // batchd.<pid>.<id> names that no process uses
  bool include_foreign = false;  // torch_* files that no process uses
};
struct GcDecision {
  enum class Action { kIgnore, kKeep, kRemove };
  Action action = Action::kIgnore;  // kIgnore: not garbage; kKeep: a candidate that must stay (reason says why)
  std::string reason;
};
// The rule above, for one entry whose in_use mark_in_use has filled. Pure.
GcDecision gc_decision(const ShmEntry& entry, const GcPolicy& policy);

struct GcOutcome {
  std::vector<ShmEntry> removed;
  std::vector<ShmEntry> kept;  // candidates that stayed; note = the reason (a failed unlink's error included)
};
// Removes every entry that gc_decision allows, segments before lock files; `entries` must have been through
// mark_in_use. A name already gone counts as removed (another collector was quicker).
GcOutcome collect_garbage(std::vector<ShmEntry> entries, const std::string& dir, const GcPolicy& policy);

// Number of fds process `pid` holds on batchd segments (memfd:batchd.* or <dir>/batchd.*); -1 if unreadable.
int count_segment_fds(pid_t pid, const std::string& dir = "/dev/shm");
// Number of distinct batchd segments process `pid` has mapped; -1 if unreadable.
int count_segment_mappings(pid_t pid, const std::string& dir = "/dev/shm");

// Size and free space of the filesystem holding `dir` (statvfs: f_blocks and f_bavail, in bytes); nullopt if
// statvfs fails.
struct ShmSpace {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};
std::optional<ShmSpace> shm_space(const std::string& dir = "/dev/shm");

// "1.5 GiB"-style rendering of a size, as messages and reports print it ("512 bytes", "64.0 MiB").
std::string format_bytes(uint64_t bytes);

}  // namespace batchd::wire
