#include "server/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace batchd::daemon {

Result<InstanceLock> InstanceLock::acquire(const std::string& socket_path) {
  const std::string path = socket_path + ".lock";
  wire::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    return posix_error("cannot open lock file " + path + " (is the socket's directory writable? pass --socket PATH)",
                       errno);
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return posix_error("cannot lock " + path, errno);
    char buf[32] = {};
    const ssize_t n = ::pread(fd.get(), buf, sizeof(buf) - 1, 0);
    const std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    return Error(ErrorCode::kUnavailable, "another batchd (pid " + holder.substr(0, holder.find('\n')) +
                                              ") is already serving " + socket_path +
                                              "; stop it first or choose another --socket");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0) {
    return posix_error("cannot write " + path, errno);
  }
  return InstanceLock(std::move(fd), path);
}

}  // namespace batchd::daemon
