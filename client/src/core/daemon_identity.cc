#include "core/daemon_identity.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>

#include "core/connect_settings.h"

namespace batchd::detail {

Result<DaemonCredentials> peer_credentials(int fd, const std::string& path) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return posix_error("cannot read the credentials (SO_PEERCRED) of the daemon at " + path, errno);
  }
  DaemonCredentials d;
  d.pid = cred.pid;
  d.uid = cred.uid;
  d.gid = cred.gid;
  d.user = user_name(cred.uid);
  return d;
}

Status check_owner(const DaemonCredentials& daemon, uid_t expected, const std::string& source,
                   const std::string& path) {
  if (daemon.uid == expected) return ok_status();
  return Error(ErrorCode::kPermissionDenied,
               "the daemon at " + path + " (pid " + std::to_string(daemon.pid) + ") runs as " +
                   describe_uid(daemon.uid) + ", not as " + describe_uid(expected) + " (required by " + source +
                   "): another user may have started a batchd on this path; use the socket of the daemon "
                   "you mean (the service's is /run/batchd/batchd.sock), or change " + source +
                   " if this daemon is the right one");
}

std::string warning_for(const DaemonCredentials& daemon, const std::string& path, uid_t caller) {
  if (daemon.uid == 0 || daemon.uid == caller) return "";
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) == 0) return "";
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "the daemon at " + path + " (pid " + std::to_string(daemon.pid) + ") runs as " + describe_uid(daemon.uid) +
         ", and " + dir + " (mode " + mode +
         ") lets other users create that name first: this may be another user's daemon, serving data of its "
         "choosing. Put the socket in a directory only its owner can write (the service's "
         "/run/batchd/batchd.sock, or $XDG_RUNTIME_DIR/batchd.sock), or require the daemon's user with "
         "BATCHD_EXPECT_OWNER=" + (daemon.user.empty() ? std::to_string(daemon.uid) : daemon.user);
}

void warn_once(const std::string& path, const std::string& warning) {
  static std::mutex mu;
  static std::set<std::string>* warned = new std::set<std::string>();  // never destroyed: safe at exit
  std::lock_guard<std::mutex> lock(mu);
  if (!warned->insert(path).second) return;
  std::fprintf(stderr, "batchd: warning: %s\n", warning.c_str());
}

}  // namespace batchd::detail
