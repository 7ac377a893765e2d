#include "server/parent_watch.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <optional>

namespace batchd::daemon {

namespace {
constexpr auto kPollInterval = std::chrono::milliseconds(200);
}

struct ParentWatch::Armed {
  explicit Armed(boost::asio::io_context& io) : timer(io) {}
  std::optional<boost::asio::posix::stream_descriptor> pidfd;  // owns the pidfd once armed
  boost::asio::steady_timer timer;                             // the ENOSYS fallback
  std::function<void()> on_exit;
  bool cancelled = false;
};

namespace {
// The ENOSYS fallback: a reparented daemon's getppid() is no longer its parent's pid.
void poll_parent(const std::shared_ptr<ParentWatch::Armed>& armed, pid_t parent) {
  armed->timer.expires_after(kPollInterval);
  armed->timer.async_wait([armed, parent](const boost::system::error_code& ec) {
    if (ec || armed->cancelled) return;
    if (::getppid() != parent) return armed->on_exit();
    poll_parent(armed, parent);
  });
}
}  // namespace

Result<ParentWatch> ParentWatch::open(pid_t pid) {
  if (pid <= 1) {
    return Error(ErrorCode::kInvalidArgument, "--exit-with-parent " + std::to_string(pid) +
                                                  ": give the pid of the process that starts batchd (> 1)");
  }
  wire::UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // close-on-exec by definition
  if (!pidfd.valid() && errno != ENOSYS) {
    return posix_error("--exit-with-parent " + std::to_string(pid) + ": pidfd_open (is the parent still running?)",
                       errno);
  }
  if (const pid_t parent = ::getppid(); parent != pid) {
    return Error(ErrorCode::kUnavailable,
                 "--exit-with-parent " + std::to_string(pid) + ": that process is not this daemon's parent (the "
                 "parent is pid " + std::to_string(parent) + "); it may have exited already. Give the pid of the "
                 "process that starts batchd, as batchd.Loader's private daemon does");
  }
  return ParentWatch(pid, std::move(pidfd));
}

ParentWatch::~ParentWatch() { cancel(); }

void ParentWatch::watch(boost::asio::io_context& io, std::function<void()> on_exit) {
  armed_ = std::make_shared<Armed>(io);
  armed_->on_exit = std::move(on_exit);
  auto armed = armed_;
  if (pidfd_.valid()) {
    armed->pidfd.emplace(io, pidfd_.release());
    // A pidfd polls readable once its process has exited.
    armed->pidfd->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                             [armed](const boost::system::error_code& ec) {
                               if (!ec && !armed->cancelled) armed->on_exit();
                             });
    return;
  }
  poll_parent(armed, pid_);
}

void ParentWatch::cancel() {
  if (armed_ == nullptr || armed_->cancelled) return;
  armed_->cancelled = true;
  if (armed_->pidfd) armed_->pidfd->cancel();
  armed_->timer.cancel();
}

}  // namespace batchd::daemon
