// child_reaper.h — ends child processes (the workers) without ever waiting for one on the event loop.
//
// end(pid, ...) sends the process a signal now (SIGTERM to ask, SIGKILL to force) and returns. If it has not exited
// `grace` later it is SIGKILLed — SIGKILL ends a stopped (SIGSTOP) process too. Exits are found by polling
// waitpid(pid, WNOHANG) on a timer every kPoll while any process is pending (a SIGCHLD handler would race the
// fork of replacements for nothing: a handful of waitpid calls per retired worker cost less than a wake-up per
// signal), and the process's on_exit(wait status) then runs on the io_context. A process still not reaped
// kStuckAfter past its SIGKILL (asleep in the kernel: a hung disk or network file system) is logged once, with its
// pid, and polled on.
//
// wait(bound) is for the daemon's exit, after the event loop: it polls, SIGKILLing the overdue, until every process
// is reaped or `bound` has passed (then it logs the pids it leaves; PR_SET_PDEATHSIG kills them with the daemon).
//
// Not thread-safe: the daemon's io_context thread. on_exit may call end() again.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace batchd::daemon {

class ChildReaper final {
 public:
  using Clock = std::chrono::steady_clock;
  using OnExit = std::function<void(int status)>;
  static constexpr std::chrono::milliseconds kPoll{5};
  static constexpr std::chrono::seconds kStuckAfter{10};

  explicit ChildReaper(boost::asio::io_context& io) : timer_(io) {}
  ChildReaper(const ChildReaper&) = delete;
  ChildReaper& operator=(const ChildReaper&) = delete;
  ~ChildReaper();  // SIGKILLs whatever is left (never waits)

  // Sends `signal` to `pid` (a child of this process) now, SIGKILL `grace` later if it has not exited; on_exit runs
  // once it is reaped. `what` names it in logs ("worker 3 (pid 1234)").
  void end(pid_t pid, int signal, std::chrono::milliseconds grace, std::string what, OnExit on_exit = {});

  // Blocks (outside the event loop only) until every pending process is reaped or `bound` has passed.
  void wait(std::chrono::milliseconds bound);

  size_t pending() const { return children_.size(); }

 private:
  struct Child {
    pid_t pid;
    Clock::time_point kill_at;
    bool killed;
    std::string what;
    OnExit on_exit;
    bool stuck_logged = false;
  };
  // One pass: reaps the exited (then runs their on_exit), SIGKILLs the overdue. Returns whether any is left.
  bool poll();
  void arm();

  boost::asio::steady_timer timer_;
  std::vector<Child> children_;
  bool armed_ = false;
};

}  // namespace batchd::daemon
