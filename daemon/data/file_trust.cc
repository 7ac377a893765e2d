#include "data/file_trust.h"

#include <pwd.h>
#include <unistd.h>

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

}  // namespace batchd::daemon
