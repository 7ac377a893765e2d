// daemon_identity.h — internal: who serves a socket (SO_PEERCRED on the client's side) and whether to trust it.
//
// After connect(), the kernel reports the credentials of the process that called listen() on the daemon's socket,
// as they were then; the daemon cannot forge them. check_owner() refuses a daemon of another uid than the one the
// client requires; without a requirement, warning_for() says when the socket's directory would let another user
// have bound the name first. Thread-safe (warn_once serializes its output).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "batchd/client.h"

namespace batchd::detail {

// SO_PEERCRED of connected socket `fd` to `path`, with the uid's user name. Errors: kIo (getsockopt failed).
Result<DaemonCredentials> peer_credentials(int fd, const std::string& path);

// kPermissionDenied unless the daemon runs as `expected` (named by `source`, the option or variable that asked).
Status check_owner(const DaemonCredentials& daemon, uid_t expected, const std::string& source,
                   const std::string& path);

// DaemonCredentials::warning for a daemon serving `path`: "" unless the socket's directory is writable by others
// than its owner (mode g+w or o+w) and the daemon is neither root nor `caller` (this process's effective uid).
std::string warning_for(const DaemonCredentials& daemon, const std::string& path, uid_t caller);

// Prints "batchd: warning: <warning>" to stderr, once per process for each socket path.
void warn_once(const std::string& path, const std::string& warning);

}  // namespace batchd::detail
