// lock_holder.h — who holds the flock on a file, as /proc/locks says: for reports only (`batchctl shm` names the
// process that keeps a batchd instance's lock), never for a decision (shm_scan.h decides by the lock alone).
//
// /proc/locks names the process that took the lock, which may since have handed its descriptor on (fork,
// SCM_RIGHTS) and exited; it shows pid 0 for a holder outside this pid namespace. Readable by every user. A plain
// function of /proc and the file system: safe from any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace batchd::wire {

struct LockHolder {
  pid_t pid = 0;     // 0: a holder this pid namespace cannot see
  std::string name;  // /proc/<pid>/comm, "" if unreadable or pid is 0
};

// The holder of a FLOCK lock on `path` (an exclusive or shared one; a waiter is not a holder); nullopt if none is
// listed, or `path` or /proc/locks cannot be read. `proc_locks` is for tests.
std::optional<LockHolder> flock_holder(const std::string& path, const std::string& proc_locks = "/proc/locks");

// "pid 1234 (python3)", "pid 1234", or "a process in another pid namespace".
std::string describe(const LockHolder& holder);

}  // namespace batchd::wire
