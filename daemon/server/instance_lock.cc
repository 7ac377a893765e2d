#include "server/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/file_trust.h"

namespace batchd::daemon {

namespace {

// The pid a holder wrote ("1234\n"), or "" if the file holds anything else: its content is never quoted otherwise.
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) return "";
  return text;
}

// Why the open lock file cannot be the daemon's ("" if it is).
std::string why_refused(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return "lock file " + path + " is not a regular file";
  if (st.st_nlink != 1) return "lock file " + path + " has " + std::to_string(st.st_nlink) + " hard links";
  return why_not_the_daemons("lock file " + path, st);
}

}  // namespace

Result<InstanceLock> InstanceLock::acquire(const std::string& socket_path) {
  const std::string path = socket_path + ".lock";
  const std::string fix = "; another user may have put it there: remove it (rm " + path +
                          ") and keep the socket's directory writable only by the daemon's user (systemd: "
                          "RuntimeDirectory=batchd), or pass --socket PATH in such a directory";
  wire::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
  if (!fd.valid() && errno == ELOOP) {
    return Error(ErrorCode::kPermissionDenied, "lock file " + path + " is a symbolic link, which batchd does not "
                                               "follow (it would write its pid wherever the link points)" + fix);
  }
  if (!fd.valid()) {
    return posix_error("cannot open lock file " + path + " (is the socket's directory writable? pass --socket PATH)",
                       errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return posix_error("cannot stat lock file " + path, errno);
  if (const std::string why = why_refused(path, st); !why.empty()) {
    return Error(ErrorCode::kPermissionDenied, why + fix);
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return posix_error("cannot lock " + path, errno);
    const std::string pid = holder_pid(fd.get());
    const std::string holder = pid.empty() ? "its pid is not in " + path : "pid " + pid;
    return Error(ErrorCode::kUnavailable, "another batchd (" + holder + ") is already serving " + socket_path +
                                              "; stop it first or choose another --socket");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0) {
    return posix_error("cannot write " + path, errno);
  }
  return InstanceLock(std::move(fd), path);
}

}  // namespace batchd::daemon
