#include "streams/shm_budget.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace batchd::daemon {

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

ShmBudget::ShmBudget(uint64_t limit_bytes, std::string shm_dir) : limit_(limit_bytes), shm_dir_(std::move(shm_dir)) {
  if (limit_ == 0) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    limit_ = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2 : 1ull << 30;
  }
}

Status ShmBudget::admit(uint64_t bytes, wire::SharingStrategy strategy) const {
  if (in_use_ + bytes > limit_) {
    return Error(ErrorCode::kResourceExhausted,
                 "the daemon's segment budget is exhausted: this stream needs " + format_bytes(bytes) + ", " +
                     format_bytes(in_use_) + " of " + format_bytes(limit_) +
                     " (limits.max_shm_bytes) are held by open streams; close streams, ask for a smaller "
                     "batch_size or depth, or raise limits.max_shm_bytes");
  }
  if (strategy == wire::FILE_SYSTEM) {
    struct statvfs vfs {};
    if (::statvfs(shm_dir_.c_str(), &vfs) != 0) return posix_error("statvfs " + shm_dir_, errno);
    const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    const uint64_t total = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
    if (bytes > free_bytes) {
      return Error(ErrorCode::kResourceExhausted,
                   "this stream's segment needs " + format_bytes(bytes) + " but " + shm_dir_ + " has only " +
                       format_bytes(free_bytes) + " free of " + format_bytes(total) +
                       "; raise its size (docker run --shm-size=8g, or mount -o remount,size=8G " + shm_dir_ +
                       "), ask for a smaller batch_size or depth, or use the file_descriptor strategy");
    }
  }
  return ok_status();
}

}  // namespace batchd::daemon
