#include "batchd/wire/lock_holder.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace batchd::wire {

namespace {

// The "MAJ:MIN:INODE" /proc/locks prints for a file (major and minor in hex, at least two digits; inode decimal).
std::string device_inode(const struct stat& st) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
                static_cast<unsigned long long>(st.st_ino));
  return buf;
}

}  // namespace

std::optional<LockHolder> flock_holder(const std::string& path, const std::string& proc_locks) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  const std::string wanted = device_inode(st);
  std::ifstream locks(proc_locks);
  std::string line;
  // "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"; a waiter's line has "->" after the number.
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, type, mode, access, where;
    pid_t pid = 0;
    if (!(fields >> number >> type) || type != "FLOCK") continue;
    if (!(fields >> mode >> access >> pid >> where) || where != wanted) continue;
    LockHolder holder{.pid = pid > 0 ? pid : 0, .name = ""};
    if (holder.pid > 0) {
      std::ifstream comm("/proc/" + std::to_string(holder.pid) + "/comm");
      std::getline(comm, holder.name);
    }
    return holder;
  }
  return std::nullopt;
}

std::string describe(const LockHolder& holder) {
  if (holder.pid == 0) return "a process in another pid namespace";
  return "pid " + std::to_string(holder.pid) + (holder.name.empty() ? "" : " (" + holder.name + ")");
}

}  // namespace batchd::wire
