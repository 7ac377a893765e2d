#include "workers/worker_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "workers/worker.h"

namespace batchd::daemon {

namespace {

// Runs in the child right after fork(): a clean slate, then the worker loop; never returns.
[[noreturn]] void become_worker(int channel, pid_t parent, const DatasetRegistry& datasets, uint32_t max_frame,
                                WorkerProgress* progress, FaultInjection faults, SampleCache* cache) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGPIPE, SIGUSR1, SIGUSR2}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the daemon
  if (::getppid() != parent) ::_exit(0);
  ::prctl(PR_SET_NAME, "batchd-worker");
  if (::dup2(channel, 3) < 0) ::_exit(3);
  ::close_range(4, ~0u, 0);
  ::_exit(run_worker(3, datasets, max_frame, progress, faults, cache));
}

}  // namespace

Result<ForkedWorker> fork_worker(size_t slot, const DatasetRegistry& datasets, uint32_t max_frame_bytes,
                                 WorkerProgress* progress, FaultInjection faults, SampleCache* cache) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
    return posix_error("socketpair for worker " + std::to_string(slot), errno);
  }
  wire::UniqueFd ours(sv[0]), theirs(sv[1]);
  progress->sample.store(-1);
  const pid_t parent = ::getpid();
  // Every signal is blocked across the fork: until the child has reset its handlers it has the daemon's (asio's
  // writes to the daemon's own signal pipe), so a SIGTERM sent to a worker just forked (a restart right after a
  // restart) would shut the daemon down. Blocked, it waits in the child until SIG_DFL applies (become_worker).
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) become_worker(theirs.get(), parent, datasets, max_frame_bytes, progress, faults, cache);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) return posix_error("fork of worker " + std::to_string(slot), fork_errno);
  return ForkedWorker{pid, std::move(ours)};
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::strsignal(WTERMSIG(status));
  return "stopped";
}

bool died_of_crash(int status) {
  if (!WIFSIGNALED(status)) return false;
  const int sig = WTERMSIG(status);
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
}

}  // namespace batchd::daemon
