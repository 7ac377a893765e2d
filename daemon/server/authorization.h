// authorization.h — who may do what on the control socket, decided by the peer's credentials alone.
//
// Anyone who can connect (the socket's mode and group decide that) may open streams and ask for status. Admin
// requests — drain and shutdown, and whatever requires_admin() lists later — are for admins only: root (uid 0), the
// daemon's own effective uid, and members of daemon.admin_group (primary or supplementary group at connect time,
// peer_credentials.h). Anyone else gets kPermissionDenied, saying who may and how to become one; the caller logs it
// and keeps the connection open.
//
// Status: an admin sees every stream; anyone else their own uid's streams and segments in full and other users'
// only as counts (StatusView in stream_manager.h). Health (the probes' request) says nothing of any stream or user:
// anyone may ask.
//
// Immutable after create(); thread-compatible.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "server/peer_credentials.h"

namespace batchd::daemon {

class AdminPolicy final {
 public:
  // `admin_group` "" = no admin group. kInvalidArgument naming daemon.admin_group if the group does not exist.
  static Result<AdminPolicy> create(const std::string& admin_group);

  bool is_admin(const PeerCredentials& peer) const;
  // The kPermissionDenied error for a non-admin's `request` (e.g. "shutdown").
  Error refusal(const std::string& request, const PeerCredentials& peer) const;

 private:
  AdminPolicy(uid_t daemon_uid, std::string admin_group, std::optional<gid_t> admin_gid)
      : daemon_uid_(daemon_uid), admin_group_(std::move(admin_group)), admin_gid_(admin_gid) {}

  uid_t daemon_uid_;
  std::string admin_group_;
  std::optional<gid_t> admin_gid_;
};

// Whether requests of this type are admin requests. Every type is listed, with no default: a request added to
// batchd.proto must be decided here (the compiler's -Wswitch points at this function).
bool requires_admin(wire::Request::BodyCase body);
// "drain", "shutdown", ...: how the request is named to users.
std::string request_name(wire::Request::BodyCase body);

}  // namespace batchd::daemon
