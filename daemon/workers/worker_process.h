// worker_process.h — one worker process as the daemon sees it from outside: fork it, learn how it ended.
//
// fork_worker() makes a socketpair and forks; the child resets signals, asks for SIGKILL when the daemon dies
// (PR_SET_PDEATHSIG), keeps stdio and its end of the channel (as fd 3), closes every other inherited fd (the
// listening socket, clients, other workers' channels, segments) and runs the worker loop (worker.h); it never
// returns. The parent gets the pid and its end of the channel. The parent ends workers with ChildReaper
// (child_reaper.h), never by waiting for them.
#pragma once

#include <sys/types.h>

#include <string>

#include "batchd/wire/unique_fd.h"
#include "data/dataset.h"
#include "transforms/presets/pipeline.h"
#include "workers/worker_progress.h"

namespace batchd::daemon {

struct ForkedWorker {
  pid_t pid = -1;
  wire::UniqueFd channel;  // the daemon's end (close-on-exec, blocking)
};

// kIo naming socketpair or fork (and errno) on failure. `faults`: fault injection for tests.
// `cache`: the daemon's sample cache (mapped before the fork, so the worker shares it), or null.
Result<ForkedWorker> fork_worker(size_t slot, const DatasetRegistry& datasets, uint32_t max_frame_bytes,
                                 WorkerProgress* progress, FaultInjection faults, SampleCache* cache);

// "exited with status 3", "killed by signal Killed", ...
std::string describe_exit(int status);
// A crash signal the process raised itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT): blames the sample it was
// on. SIGKILL/SIGTERM (an operator, the OOM killer, a chaos test) blame nothing.
bool died_of_crash(int status);

}  // namespace batchd::daemon
