#include "server/peer_credentials.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace batchd::daemon {

bool PeerCredentials::in_group(gid_t group) const {
  return gid == group || std::find(groups.begin(), groups.end(), group) != groups.end();
}

std::string PeerCredentials::describe() const {
  return "pid " + std::to_string(pid) + " uid " +
         (uid == static_cast<uid_t>(-1) ? std::string("unknown") : std::to_string(uid));
}

Result<PeerCredentials> peer_credentials(int fd) {
  PeerCredentials peer;
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return posix_error("cannot read the peer's credentials (SO_PEERCRED)", errno);
  }
  peer.pid = cred.pid;
  peer.uid = cred.uid;
  peer.gid = cred.gid;
  // SO_PEERGROUPS answers ERANGE with the size it needs; a peer may have up to NGROUPS_MAX (65536) groups.
  std::vector<gid_t> groups(32);
  for (int attempt = 0; attempt < 4; ++attempt) {
    socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) == 0) {
      groups.resize(bytes / sizeof(gid_t));
      peer.groups = std::move(groups);
      break;
    }
    if (errno != ERANGE) break;  // ENOPROTOOPT: a kernel before 4.13; the primary gid still counts
    groups.resize(bytes / sizeof(gid_t) + 1);
  }
  return peer;
}

}  // namespace batchd::daemon
