#include "streams/segment_instance.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "batchd/wire/shm_scan.h"

namespace batchd::daemon {

namespace {

Result<std::string> fresh_id() {
  uint64_t bits = 0;
  ssize_t n;
  do {
    n = ::getrandom(&bits, sizeof(bits), 0);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(bits))) return posix_error("getrandom for the daemon's instance id", errno);
  char hex[wire::kInstanceIdChars + 1];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(bits));
  return std::string(hex);
}

}  // namespace

Result<SegmentInstance> SegmentInstance::claim(const std::string& dir, const std::string& socket_path) {
  const std::string fix = "; batchd needs a writable " + dir + " on a filesystem with O_TMPFILE (tmpfs has it)";
  for (int attempt = 0; attempt < 8; ++attempt) {
    auto id = fresh_id();
    if (!id.ok()) return id.error();
    wire::UniqueFd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644));
    if (!fd.valid()) return posix_error("cannot create the instance lock in " + dir + fix, errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return posix_error("cannot lock a new file in " + dir, errno);
    const std::string text = "batchd pid " + std::to_string(::getpid()) + " serving " + socket_path + "\n";
    if (::fchmod(fd.get(), 0644) != 0 || ::pwrite(fd.get(), text.data(), text.size(), 0) < 0) {
      return posix_error("cannot write the instance lock in " + dir + fix, errno);
    }
    const std::string path = dir + "/" + wire::instance_lock_name(*id);
    const std::string self = "/proc/self/fd/" + std::to_string(fd.get());
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      return SegmentInstance(std::move(id).value(), dir, std::move(fd));
    }
    if (errno != EEXIST) return posix_error("cannot link the instance lock " + path + fix, errno);
  }
  return Error(ErrorCode::kInternal, "8 random instance ids in a row were taken in " + dir);
}

SegmentInstance::SegmentInstance(SegmentInstance&& other) noexcept
    : id_(std::move(other.id_)), dir_(std::move(other.dir_)), lock_(std::move(other.lock_)) {}

SegmentInstance& SegmentInstance::operator=(SegmentInstance&& other) noexcept {
  if (this != &other) {
    unlink_lock();
    id_ = std::move(other.id_);
    dir_ = std::move(other.dir_);
    lock_ = std::move(other.lock_);
  }
  return *this;
}

SegmentInstance::~SegmentInstance() { unlink_lock(); }

void SegmentInstance::unlink_lock() {
  if (!lock_.valid()) return;
  // Still locked while unlinking: no collector can take the name for a gone instance's before it disappears.
  ::unlink((dir_ + "/" + wire::instance_lock_name(id_)).c_str());
  lock_.reset();
}

}  // namespace batchd::daemon
