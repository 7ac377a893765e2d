// shm_scan.h — what lies in /dev/shm, seen without the daemon: our segments, our orphans, foreign leftovers.
//
// A batchd segment is named batchd.<daemon-pid>.<stream-id>. It is an orphan when no batchd process with that pid
// runs any more (SIGKILLed or crashed before it could unlink), or when the pid is the caller's own at daemon
// start-up (a previous daemon that had the same pid, as happens in containers). Everything else in /dev/shm is
// foreign: PyTorch's torch_* leftovers, POSIX semaphores (sem.*), other programs' segments. Used by the daemon at
// start-up (remove orphans) and by `batchctl shm` (report; --gc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace batchd::daemon {

struct ShmEntry {
  enum class Kind { kLive, kOrphan, kForeign };
  std::string name;  // without the directory
  Kind kind = Kind::kForeign;
  pid_t daemon_pid = 0;  // batchd.<pid>.* only
  uint64_t bytes = 0;
  double age_seconds = 0;  // since last modification
  bool in_use = false;     // open or mapped by some process (filled by mark_in_use)
};

// True if `pid` is a running process whose command name is "batchd".
bool is_live_batchd(pid_t pid);

// Every regular file in `dir`, classified. `self_is_daemon`: treat batchd.<getpid()>.* as orphans (the daemon at
// start-up has created nothing yet).
std::vector<ShmEntry> scan_shm(const std::string& dir = "/dev/shm", bool self_is_daemon = false);

// Sets in_use for entries that some process has open or mapped (from /proc/*/fd and /proc/*/maps; processes
// whose /proc we cannot read are not seen).
void mark_in_use(std::vector<ShmEntry>& entries, const std::string& dir = "/dev/shm");

// Number of fds process `pid` holds on batchd segments (memfd:batchd.* or <dir>/batchd.*); -1 if unreadable.
int count_segment_fds(pid_t pid, const std::string& dir = "/dev/shm");
// Number of distinct batchd segments process `pid` has mapped; -1 if unreadable.
int count_segment_mappings(pid_t pid, const std::string& dir = "/dev/shm");

// Removes the orphans among batchd.* (at daemon start-up); returns what was removed. Errors are logged.
std::vector<ShmEntry> remove_orphan_segments(const std::string& dir = "/dev/shm");

}  // namespace batchd::daemon
