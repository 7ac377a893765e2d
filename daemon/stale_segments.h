// stale_segments.h — finds and removes file_system segments whose daemon is gone.
//
// A named segment is /dev/shm/batchd.<daemon-pid>.<stream-id>. It is stale when no batchd process with that pid
// runs any more (the daemon was SIGKILLed or crashed before it could unlink), or when the pid is our own at
// start-up (a previous daemon that had the same pid, as happens in containers). The daemon removes stale segments
// at start-up; file_descriptor segments (memfd) never need this.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace batchd::daemon {

struct StaleSegment {
  std::string name;  // without the /dev/shm/ prefix
  pid_t daemon_pid = 0;
  uint64_t bytes = 0;
};

// True if `pid` is a running process whose command name is "batchd".
bool is_live_batchd(pid_t pid);

// Segments in `shm_dir` named batchd.<pid>.<id> whose pid is not a live batchd other than ourselves.
std::vector<StaleSegment> find_stale_segments(const std::string& shm_dir = "/dev/shm");

// Removes them; returns what was removed (errors are logged and skipped).
std::vector<StaleSegment> remove_stale_segments(const std::string& shm_dir = "/dev/shm");

}  // namespace batchd::daemon
