// segment_instance.h — this daemon run's identity in the shm directory: a fresh instance id and the lock whose
// holder proves the instance alive (the naming and the probe are in proto's wire/shm_scan.h).
//
// claim() draws 16 hex digits from getrandom and creates <dir>/batchd.<id>.lock already locked: an unnamed
// O_TMPFILE inode is flocked (LOCK_EX), filled with "batchd pid <pid> serving <socket>" for people, made mode 0644
// (anyone may probe it) and only then linked under its name — so no collector can ever find the file unlocked while
// its instance runs. A name that exists already (linkat: EEXIST) makes claim() draw another id. The lock is held for
// the daemon's lifetime: the fd is close-on-exec and forked workers close every inherited fd, so the kernel drops it
// when the daemon process dies, however it dies — and from then on the instance's segments are orphans that the
// next daemon's start-up or `batchctl shm --gc` may remove. Destruction (a clean exit; the SegmentPool owns the
// instance, so it goes after the last segment) unlinks the lock file.
//
// Errors name the directory and the fix (batchd needs a writable /dev/shm supporting O_TMPFILE, as tmpfs does).
// Move-only RAII; not thread-safe.
#pragma once

#include <string>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::daemon {

class SegmentInstance final {
 public:
  // `socket_path` is only written into the lock file, for people.
  static Result<SegmentInstance> claim(const std::string& dir = "/dev/shm", const std::string& socket_path = "");

  SegmentInstance(SegmentInstance&& other) noexcept;
  SegmentInstance& operator=(SegmentInstance&& other) noexcept;
  SegmentInstance(const SegmentInstance&) = delete;
  SegmentInstance& operator=(const SegmentInstance&) = delete;
  ~SegmentInstance();

  const std::string& id() const { return id_; }  // 16 lowercase hex digits
  const std::string& dir() const { return dir_; }

 private:
  SegmentInstance(std::string id, std::string dir, wire::UniqueFd lock)
      : id_(std::move(id)), dir_(std::move(dir)), lock_(std::move(lock)) {}
  void unlink_lock();

  std::string id_;
  std::string dir_;
  wire::UniqueFd lock_;  // holds the flock; invalid once moved from
};

}  // namespace batchd::daemon
