// instance_lock.h — one daemon per socket: an exclusive flock on "<socket>.lock" held for the daemon's lifetime
// (the pattern of iceoryx's RouDi). The lock file holds the owner's pid, so a refused second daemon can say which
// process holds it. The kernel drops the lock when the holder dies, however it dies; the file itself is left in
// place (unlinking it could let two daemons lock two different inodes).
//
// The lock file is the daemon's own, or it is not used: it is opened with O_NOFOLLOW (a symlink there, planted or
// not, is refused, never written through), and one that is not a regular file, has other hard links, or is not
// owned by the daemon's uid or is writable by others is refused (kPermissionDenied naming the file, its owner and
// the fix): another user could have planted it to keep the daemon from starting or to have it overwrite a file.
// Its content is quoted only when it is a pid.
#pragma once

#include <string>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::daemon {

class InstanceLock final {
 public:
  // kUnavailable naming the holder's pid if another live daemon holds the lock; kPermissionDenied for a lock file
  // that is not the daemon's (above); posix_error if it cannot be opened.
  static Result<InstanceLock> acquire(const std::string& socket_path);

  const std::string& path() const { return path_; }

 private:
  InstanceLock(wire::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  wire::UniqueFd fd_;
  std::string path_;
};

}  // namespace batchd::daemon
