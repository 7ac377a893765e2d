#include "base/file_trust.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace batchd::daemon {

std::string describe_uid(uid_t uid) {
  std::vector<char> buf(4096);
  passwd pw {};
  passwd* found = nullptr;
  const std::string number = "uid " + std::to_string(uid);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return number;
  return number + " (" + found->pw_name + ")";
}

std::string why_not_the_daemons(const std::string& what, const struct stat& st, bool own_group_may_write) {
  char mode[16];
  std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (st.st_uid != ::geteuid()) {
    return what + " is owned by " + describe_uid(st.st_uid) + ", not by the daemon's " + describe_uid(::geteuid());
  }
  if (st.st_mode & S_IWOTH) return what + " is writable by others (mode " + mode + ")";
  if ((st.st_mode & S_IWGRP) && !(own_group_may_write && st.st_gid == ::getegid())) {
    return what + " is writable by group " + std::to_string(st.st_gid) + " (mode " + mode + ")";
  }
  return "";
}

namespace {

std::string foreign_symlink_from(const std::string& what, const std::string& path, int depth) {
  if (depth > 40) return what + ": " + path + " has too many levels of symbolic links";
  std::string prefix;
  for (size_t begin = 0; begin < path.size();) {
    const size_t end = std::min(path.find('/', begin + 1), path.size());
    prefix += path.substr(begin, end - begin);
    begin = end;
    struct stat st {};
    if (prefix == "/" || ::lstat(prefix.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
      return what + ": " + prefix + " is a symbolic link owned by " + describe_uid(st.st_uid) +
             ", which the daemon does not follow";
    }
    char target[4096];
    const ssize_t n = ::readlink(prefix.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    std::string to(target, static_cast<size_t>(n));
    if (to[0] != '/') to = prefix.substr(0, prefix.rfind('/') + 1) + to;
    if (std::string why = foreign_symlink_from(what, to, depth + 1); !why.empty()) return why;
  }
  return "";
}

}  // namespace

std::string foreign_symlink_in(const std::string& what, const std::string& path) {
  return foreign_symlink_from(what, path, 0);
}

}  // namespace batchd::daemon
