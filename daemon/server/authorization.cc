#include "server/authorization.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

namespace batchd::daemon {

Result<AdminPolicy> AdminPolicy::create(const std::string& admin_group) {
  std::optional<gid_t> gid;
  if (!admin_group.empty()) {
    const group* g = ::getgrnam(admin_group.c_str());
    if (g == nullptr) {
      return Error(ErrorCode::kInvalidArgument,
                   "daemon.admin_group '" + admin_group + "' is not a group on this host (see getent group)");
    }
    gid = g->gr_gid;
  }
  return AdminPolicy(::geteuid(), admin_group, gid);
}

bool AdminPolicy::is_admin(const PeerCredentials& peer) const {
  if (peer.uid == 0 || peer.uid == daemon_uid_) return true;
  return admin_gid_ && peer.in_group(*admin_gid_);
}

Error AdminPolicy::refusal(const std::string& request, const PeerCredentials& peer) const {
  const passwd* pw = ::getpwuid(daemon_uid_);
  const std::string daemon_user =
      (pw != nullptr ? std::string(pw->pw_name) + ", " : std::string()) + "uid " + std::to_string(daemon_uid_);
  std::string who = "only root, the daemon's user (" + daemon_user + ")";
  std::string how;
  if (admin_gid_) {
    who += " and members of group '" + admin_group_ + "' (daemon.admin_group)";
    how = "ask an administrator to add you to group '" + admin_group_ + "' (usermod -aG " + admin_group_ +
          " USER), then log in again and reconnect";
  } else {
    who += " (the daemon's config names no daemon.admin_group)";
    how =
        "run it as one of them, or ask an administrator to set daemon.admin_group in the daemon's config to a "
        "group you are a member of";
  }
  return Error(ErrorCode::kPermissionDenied, request + " is an admin request: " + who + " may send it, and you " +
                                                 "connected as " + peer.describe() + "; " + how);
}

bool requires_admin(wire::Request::BodyCase body) {
  switch (body) {
    case wire::Request::kDrain:
    case wire::Request::kShutdown:
    case wire::Request::kCacheDrop:  // the cache is every user's: only an admin empties it
      return true;
    case wire::Request::kOpenStream:
    case wire::Request::kCloseStream:
    case wire::Request::kRelease:
    case wire::Request::kStatus:  // answered with a view: others' streams only as counts
    case wire::Request::kHealth:  // nothing about any stream or user: for everyone (the probes)
    case wire::Request::kAttachWorker:  // to one's own streams only (StreamManager::attach_worker checks the uid)
    case wire::Request::kWorkerDone:
    case wire::Request::BODY_NOT_SET:
      return false;
  }
  return false;  // a body this daemon does not know: dispatch refuses it as a protocol error
}

std::string request_name(wire::Request::BodyCase body) {
  const auto* field = wire::Request::descriptor()->FindFieldByNumber(static_cast<int>(body));
  return field != nullptr ? field->name() : "request type " + std::to_string(static_cast<int>(body));
}

}  // namespace batchd::daemon
