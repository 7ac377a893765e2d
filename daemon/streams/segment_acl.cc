#include "streams/segment_acl.h"

#include <acl/libacl.h>
#include <unistd.h>

#include <cerrno>

namespace batchd::daemon {

Result<Acl> Acl::for_client(uid_t client_uid, bool writable) {
  Acl acl(::acl_init(5));
  if (acl.acl_ == nullptr) return posix_error("acl_init", errno);
  BATCHD_RETURN_IF_ERROR(acl.add(ACL_USER_OBJ, nullptr, true, true));
  BATCHD_RETURN_IF_ERROR(acl.add(ACL_USER, &client_uid, true, writable));
  BATCHD_RETURN_IF_ERROR(acl.add(ACL_GROUP_OBJ, nullptr, false, false));
  BATCHD_RETURN_IF_ERROR(acl.add(ACL_MASK, nullptr, true, writable));  // = the one named entry
  BATCHD_RETURN_IF_ERROR(acl.add(ACL_OTHER, nullptr, false, false));
  if (::acl_valid(acl.acl_) != 0) return Error(ErrorCode::kInternal, "invalid segment ACL " + acl.text());
  return acl;
}

Result<Acl> Acl::of(int fd) {
  Acl acl(::acl_get_fd(fd));
  if (acl.acl_ == nullptr) return posix_error("acl_get_fd", errno);
  return acl;
}

Status Acl::add(acl_tag_t tag, const uid_t* qualifier, bool read, bool write) {
  acl_entry_t entry;
  acl_permset_t perms;
  if (::acl_create_entry(&acl_, &entry) != 0 || ::acl_set_tag_type(entry, tag) != 0 ||
      (qualifier != nullptr && ::acl_set_qualifier(entry, qualifier) != 0) || ::acl_get_permset(entry, &perms) != 0 ||
      ::acl_clear_perms(perms) != 0 || (read && ::acl_add_perm(perms, ACL_READ) != 0) ||
      (write && ::acl_add_perm(perms, ACL_WRITE) != 0) || ::acl_set_permset(entry, perms) != 0) {
    return posix_error("building a segment ACL", errno);
  }
  return ok_status();
}

Status Acl::apply(int fd, const std::string& what) const {
  if (::acl_set_fd(fd, acl_) == 0) return ok_status();
  const int err = errno;
  if (err == ENOTSUP || err == EOPNOTSUPP) {
    return Error(ErrorCode::kInvalidArgument,
                 "cannot give the stream's client access to " + what + ": its filesystem has no POSIX ACL support, "
                 "which the file_system strategy needs so that only the stream's own uid can open its segment; use "
                 "the file_descriptor strategy (StreamOptions::strategy, or daemon.shm_strategy), or mount /dev/shm "
                 "with POSIX ACL support (tmpfs has it where the kernel has CONFIG_TMPFS_POSIX_ACL, as Debian's)");
  }
  return posix_error("cannot set the ACL " + text() + " on " + what, err);
}

std::string Acl::text() const {
  char* raw = ::acl_to_any_text(acl_, nullptr, ',', TEXT_NUMERIC_IDS);
  if (raw == nullptr) return "(unprintable ACL)";
  std::string out(raw);
  ::acl_free(raw);
  return out;
}

void Acl::reset() {
  if (acl_ != nullptr) ::acl_free(acl_);
  acl_ = nullptr;
}

Status grant_client(int fd, uid_t client_uid, bool writable, const std::string& segment) {
  if (client_uid == ::geteuid()) return ok_status();  // the owner: mode 0600 is all it needs
  auto acl = Acl::for_client(client_uid, writable);
  if (!acl.ok()) return acl.error();
  return acl->apply(fd, segment);
}

}  // namespace batchd::daemon
