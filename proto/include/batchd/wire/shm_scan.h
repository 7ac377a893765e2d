// shm_scan.h — what lies in /dev/shm, seen from outside any daemon: batchd segments of live daemons, orphans,
// foreign leftovers; who holds segments; how full the filesystem is.
//
// A batchd segment is named batchd.<daemon-pid>.<stream-id>. It is an orphan when no batchd process with that pid
// runs any more (SIGKILLed or crashed before it could unlink), or when the pid is the caller's own at daemon
// start-up (a previous daemon that had the same pid, as happens in containers). Everything else in /dev/shm is
// foreign: PyTorch's torch_* leftovers, POSIX semaphores (sem.*), other programs' segments.
//
// Used by the daemon at start-up (daemon/streams/orphan_segments.h removes orphans) and by the client's shm report
// (batchd/admin.h, behind `batchctl shm`). Nothing here writes or removes anything; processes whose /proc this
// user cannot read are not seen. Plain functions of the file system and /proc: safe from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace batchd::wire {

struct ShmEntry {
  enum class Kind { kLive, kOrphan, kForeign };
  std::string name;  // without the directory
  Kind kind = Kind::kForeign;
  pid_t daemon_pid = 0;  // batchd.<pid>.* only
  uint64_t bytes = 0;
  double age_seconds = 0;  // since last modification
  bool in_use = false;     // open or mapped by some process (filled by mark_in_use)
};

// True for PyTorch's file_system strategy names (torch_<pid>_<random>): the foreign leftovers that
// `batchctl shm --gc --include-foreign` may remove.
bool is_torch_leftover(const std::string& name);

// True if `pid` is a running process whose command name is "batchd".
bool is_live_batchd(pid_t pid);

// Every regular file in `dir`, classified. `self_is_daemon`: treat batchd.<getpid()>.* as orphans (the daemon at
// start-up has created nothing yet). An unreadable `dir` gives an empty list.
std::vector<ShmEntry> scan_shm(const std::string& dir = "/dev/shm", bool self_is_daemon = false);

// Sets in_use for entries that some process has open or mapped (from /proc/*/fd and /proc/*/maps).
void mark_in_use(std::vector<ShmEntry>& entries, const std::string& dir = "/dev/shm");

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
