// peer_credentials.h — who is at the other end of a connected Unix socket, as the kernel recorded it.
//
// SO_PEERCRED gives the peer's pid, uid and primary gid, SO_PEERGROUPS (Linux 4.13+) its supplementary groups; the
// kernel fills both in when the peer calls connect() (or socketpair()), so the peer cannot forge them. They are the
// credentials *at connect time*: a process that changes its uid or groups later is still judged by the ones it
// connected with, and one that hands the connected socket to another process (SCM_RIGHTS, fork) lends it that
// identity. A pid may be reused after its process exits: it is for logs, never for decisions.
//
// Plain values; thread-compatible.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);  // -1 (nobody) if the kernel would not say: such a peer is never an admin
  gid_t gid = static_cast<gid_t>(-1);
  std::vector<gid_t> groups;  // supplementary groups; empty on kernels without SO_PEERGROUPS

  // Whether `group` is the peer's primary or one of its supplementary groups.
  bool in_group(gid_t group) const;
  // "pid 123 uid 1000", for log lines and error messages.
  std::string describe() const;
};

// The credentials of the peer of connected Unix socket `fd`. An error (naming SO_PEERCRED) only if the kernel
// refuses the pid/uid/gid; a kernel without SO_PEERGROUPS just leaves `groups` empty.
Result<PeerCredentials> peer_credentials(int fd);

}  // namespace batchd::daemon
