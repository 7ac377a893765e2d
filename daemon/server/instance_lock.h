// instance_lock.h — one daemon per socket: an exclusive flock on "<socket>.lock" held for the daemon's lifetime
// (the pattern of iceoryx's RouDi). The lock file holds the owner's pid, so a refused second daemon can say which
// process holds it. The kernel drops the lock when the holder dies, however it dies; the file itself is left in
// place (unlinking it could let two daemons lock two different inodes).
#pragma once

#include <string>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::daemon {

class InstanceLock final {
 public:
  // kUnavailable naming the holder's pid if another live daemon holds the lock.
  static Result<InstanceLock> acquire(const std::string& socket_path);

  const std::string& path() const { return path_; }

 private:
  InstanceLock(wire::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  wire::UniqueFd fd_;
  std::string path_;
};

}  // namespace batchd::daemon
