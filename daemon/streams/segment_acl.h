// segment_acl.h — who may open a file_system segment: the POSIX ACL batchd puts on it (Debian's libacl).
//
// A file_system segment is created mode 0600 and owned by the daemon's uid; it is never chowned to a client (an
// owner could chmod it, or truncate it under the workers). grant_client() gives the stream's client uid (the peer's
// SO_PEERCRED uid) exactly one named entry, r-- or, for a stream opened writable, rw-; the mask equals that entry;
// the owning group and others get nothing:
//     user::rw-   user:<client>:r--   group::---   mask::r--   other::---
// (ls -l shows the mask in the group bits: -rw-r-----+). When the client is the daemon's own uid the mode alone
// suffices and nothing is set. Workers receive the daemon's fd over their channel: the ACL does not concern them.
//
// Errors: a filesystem without POSIX ACLs (acl_set_fd fails with ENOTSUP/EOPNOTSUPP) is kInvalidArgument naming
// the segment, what is missing and both fixes (the file_descriptor strategy, or a /dev/shm with POSIX ACL support);
// other failures are posix_error naming the segment. Acl is a move-only RAII owner of one acl_t. Thread-safe (no
// shared state).
#pragma once

#include <sys/acl.h>
#include <sys/types.h>

#include <string>
#include <utility>

#include "batchd/result.h"

namespace batchd::daemon {

class Acl final {
 public:
  // The ACL above, for `client_uid`.
  static Result<Acl> for_client(uid_t client_uid, bool writable);
  // The access ACL of the file open as `fd` (its mode alone when it has no ACL), to look at.
  static Result<Acl> of(int fd);

  Acl(Acl&& other) noexcept : acl_(std::exchange(other.acl_, nullptr)) {}
  Acl& operator=(Acl&& other) noexcept {
    if (this != &other) {
      reset();
      acl_ = std::exchange(other.acl_, nullptr);
    }
    return *this;
  }
  Acl(const Acl&) = delete;
  Acl& operator=(const Acl&) = delete;
  ~Acl() { reset(); }

  // Replaces the access ACL of the file open as `fd`; `what` names it in errors.
  Status apply(int fd, const std::string& what) const;
  // "user::rw-,user:1000:r--,group::---,mask::r--,other::---" (numeric ids; "user::rw-,group::---,other::---"
  // for a file that has only its mode).
  std::string text() const;

 private:
  explicit Acl(acl_t acl) : acl_(acl) {}
  Status add(acl_tag_t tag, const uid_t* qualifier, bool read, bool write);
  void reset();

  acl_t acl_ = nullptr;
};

// Gives `client_uid` access to the segment open as `fd` (named `segment` in errors) as described above; nothing to
// do when `client_uid` is the daemon's effective uid.
Status grant_client(int fd, uid_t client_uid, bool writable, const std::string& segment);

}  // namespace batchd::daemon
