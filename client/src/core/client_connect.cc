// client_connect.cc — ClientCore::connect (client_core.h): the Unix socket, a connect() whose wait for a full
// listen backlog is bounded, and the daemon's identity (daemon_identity.h); and the texts of a timeout's error.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/client_core.h"
#include "core/connect_settings.h"
#include "core/daemon_identity.h"

namespace batchd::detail {

std::string seconds_text(std::chrono::milliseconds timeout) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", static_cast<double>(timeout.count()) / 1000.0);
  return text;
}

std::string timeout_fix() {
  return "is it stopped (SIGSTOP) or overloaded? Look at it (`systemctl status batchd`, `journalctl -u batchd`); if "
         "it is only slow, raise BATCHD_TIMEOUT (seconds; 0 = no deadline) or the caller's timeout (batchctl "
         "--timeout, batchd.Loader(request_timeout=), ConnectOptions::request_timeout)";
}

Result<std::shared_ptr<ClientCore>> ClientCore::connect(const ConnectOptions& options) {
  auto settings = resolve(options);
  if (!settings.ok()) return settings.error();
  const std::string& path = settings->path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Error(ErrorCode::kInvalidArgument, "socket path '" + path + "' is too long for a Unix socket");
  }
  path.copy(addr.sun_path, path.size());
  wire::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return posix_error("socket()", errno);
  // A blocking connect() waits while the daemon's listen backlog is full (a stopped daemon's fills up); for a Unix
  // socket SO_SNDTIMEO bounds that wait (EAGAIN).
  const auto timeout = settings->request_timeout;
  const timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) return posix_error("SO_SNDTIMEO", errno);
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    const int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      return Error(ErrorCode::kUnavailable,
                   "no batchd is listening on " + path + " (" + std::strerror(err) +
                       "); start it (systemctl start batchd, or batchd --socket " + path +
                       ") or point BATCHD_SOCKET at the right socket");
    }
    if (err == EACCES || err == EPERM) {
      return Error(ErrorCode::kIo, "permission denied connecting to " + path +
                                       "; add this user to the socket's group (see daemon.socket_mode)");
    }
    if (err == EAGAIN || err == EWOULDBLOCK) {
      return Error(ErrorCode::kUnavailable, "the daemon at " + path + " did not accept the connection within " +
                                                seconds_text(timeout) + " (its listen backlog is full): " +
                                                timeout_fix());
    }
    return posix_error("cannot connect to " + path, err);
  }
  if (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK) != 0) {
    return posix_error("cannot make the connection to " + path + " non-blocking", errno);
  }
  auto daemon = peer_credentials(fd.get(), path);
  if (!daemon.ok()) return daemon.error();
  if (settings->expected_owner) {
    BATCHD_RETURN_IF_ERROR(check_owner(*daemon, *settings->expected_owner, settings->owner_source, path));
  } else {
    daemon->warning = warning_for(*daemon, path, ::geteuid());
    if (settings->warn && !daemon->warning.empty()) warn_once(path, daemon->warning);
  }
  return std::shared_ptr<ClientCore>(new ClientCore(std::move(fd), path, timeout, std::move(daemon).value()));
}

}  // namespace batchd::detail
