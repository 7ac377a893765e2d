#include "workers/child_reaper.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <cerrno>
#include <thread>
#include <utility>

namespace batchd::daemon {

ChildReaper::~ChildReaper() {
  for (const Child& c : children_) ::kill(c.pid, SIGKILL);
}

void ChildReaper::end(pid_t pid, int signal, std::chrono::milliseconds grace, std::string what, OnExit on_exit) {
  ::kill(pid, signal);
  const bool killed = signal == SIGKILL;
  children_.push_back(Child{pid, killed ? Clock::now() : Clock::now() + grace, killed, std::move(what),
                            std::move(on_exit)});
  arm();
}

void ChildReaper::arm() {
  if (armed_ || children_.empty()) return;
  armed_ = true;
  timer_.expires_after(kPoll);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    armed_ = false;
    if (ec) return;
    if (poll()) arm();
  });
}

bool ChildReaper::poll() {
  const auto now = Clock::now();
  std::vector<std::pair<OnExit, int>> exited;
  for (size_t i = 0; i < children_.size();) {
    Child& c = children_[i];
    int status = 0;
    pid_t r;
    do r = ::waitpid(c.pid, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == c.pid || (r < 0 && errno == ECHILD)) {  // ECHILD: reaped elsewhere; nothing left to wait for
      if (c.on_exit) exited.emplace_back(std::move(c.on_exit), status);
      children_.erase(children_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (!c.killed && now >= c.kill_at) {
      spdlog::warn("{} did not exit in time (stopped or hung); killing it (SIGKILL)", c.what);
      ::kill(c.pid, SIGKILL);
      c.killed = true;
      c.kill_at = now;
    } else if (c.killed && !c.stuck_logged && now - c.kill_at >= kStuckAfter) {
      spdlog::warn("{} is still not gone {} s after SIGKILL: it is asleep in the kernel (a hung disk or network "
                   "file system?); see /proc/{}/stack. Its slot runs a replacement meanwhile",
                   c.what, kStuckAfter.count(), c.pid);
      c.stuck_logged = true;
    }
    ++i;
  }
  for (auto& [on_exit, status] : exited) on_exit(status);  // after the loop: on_exit may call end()
  return !children_.empty();
}

void ChildReaper::wait(std::chrono::milliseconds bound) {
  const auto deadline = Clock::now() + bound;
  while (poll()) {
    if (Clock::now() >= deadline) {
      for (const Child& c : children_) {
        spdlog::warn("{} still not reaped at exit; leaving it to the kernel (PR_SET_PDEATHSIG)", c.what);
      }
      return;
    }
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace batchd::daemon
