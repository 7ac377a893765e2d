// orphan_segments.h — the daemon's start-up clean-up of /dev/shm: segments and instance locks of batchd instances
// that are provably gone.
//
// A batchd that was SIGKILLed or crashed leaves its file_system segments (batchd.<instance>.<id>) and its lock file
// (batchd.<instance>.lock) behind; the kernel dropped its lock when it died, and that is the proof that it is gone
// (proto's wire/shm_scan.h: no process name or pid is consulted, so a daemon started under another name, or one in
// another pid namespace sharing /dev/shm, keeps its segments). The new daemon removes those files, as its own
// effective uid and under the rule of wire::gc_decision: never a file that a process it can see has open or
// mapped, and, unless it runs as root, only files it owns. Legacy batchd.<pid>.<id> names of older versions are left
// alone (nothing proves their daemon gone; `batchctl shm --gc` removes those that no process uses), as is
// everything that is not batchd's. Runs after this daemon claimed its own instance, whose lock it holds.
#pragma once

#include <string>

#include "batchd/wire/shm_scan.h"

namespace batchd::daemon {

// Removes what is described above from `dir`; returns the outcome. Each removal is logged (info), each file kept
// with its reason (warn; legacy names in one line): nothing here stops the daemon.
wire::GcOutcome remove_orphan_segments(const std::string& dir = "/dev/shm");

}  // namespace batchd::daemon
