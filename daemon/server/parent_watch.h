// parent_watch.h — `--exit-with-parent PID`: the daemon ends when the process that started it exits, however it
// exits (SIGKILL included). batchd.Loader's private daemon uses it (client/python/batchd/_daemon/private.py), so a
// daemon started for one trainer never outlives it.
//
// open(pid) takes a pidfd of `pid` (pidfd_open, Linux >= 5.3), then checks that `pid` is still this process's parent
// (getppid()): the check after the open proves the pidfd is the parent's, not a later process that reused its pid.
// A parent already gone (the daemon was reparented) or a pid that is not the parent: kUnavailable naming both pids.
// Without pidfd_open (ENOSYS, an older kernel) the watch polls getppid() every 200 ms instead.
//
// watch(io, on_exit) arms the wait on io: on_exit runs once, on io's thread, when the parent has exited (at once if
// it already has); main.cc's on_exit raises SIGTERM, so the daemon drains as on `systemctl stop` (every segment
// released, the socket removed). cancel() disarms it (the drain: nothing may keep the event loop alive); on_exit is
// then not called. Destruction cancels too: an armed watch must be destroyed before its io_context. Move-only;
// moving after watch() is fine (the armed state lives on the heap). Not thread-safe.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::daemon {

class ParentWatch final {
 public:
  static Result<ParentWatch> open(pid_t pid);

  void watch(boost::asio::io_context& io, std::function<void()> on_exit);
  void cancel();

  pid_t pid() const { return pid_; }

  ParentWatch(ParentWatch&&) noexcept = default;
  ParentWatch& operator=(ParentWatch&&) noexcept = default;
  ~ParentWatch();

  struct Armed;  // parent_watch.cc's

 private:
  ParentWatch(pid_t pid, wire::UniqueFd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}

  pid_t pid_ = -1;
  wire::UniqueFd pidfd_;          // invalid: no pidfd_open, poll getppid()
  std::shared_ptr<Armed> armed_;  // after watch(): the descriptor or the timer, shared with the pending handler
};

}  // namespace batchd::daemon
