// orphan_segments.h — the daemon's start-up clean-up of /dev/shm: segments left by a batchd that is gone.
//
// A batchd that was SIGKILLed or crashed leaves its file_system segments (batchd.<pid>.<id>) behind; the next
// daemon removes them before it creates any of its own (wire::scan_shm with self_is_daemon, so a previous daemon
// that had this pid counts as gone). Names that are not batchd.<pid>.<id> are never touched.
#pragma once

#include <string>
#include <vector>

#include "batchd/wire/shm_scan.h"

namespace batchd::daemon {

// Removes the orphans among batchd.* in `dir`; returns what was removed. Each removal is logged (info), each
// failure too (warn): a failure does not stop the daemon.
std::vector<wire::ShmEntry> remove_orphan_segments(const std::string& dir = "/dev/shm");

}  // namespace batchd::daemon
