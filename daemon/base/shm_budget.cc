#include "base/shm_budget.h"

#include "batchd/wire/shm_scan.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace batchd::daemon {

ShmBudget::ShmBudget(uint64_t limit_bytes, std::string shm_dir) : limit_(limit_bytes), shm_dir_(std::move(shm_dir)) {
  if (limit_ == 0) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    limit_ = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2 : 1ull << 30;
  }
}

Status ShmBudget::admit(uint64_t bytes, wire::SharingStrategy strategy) const {
  const uint64_t cache = also_held_ ? also_held_() : 0;
  if (in_use_ + cache + bytes > limit_) {
    return Error(ErrorCode::kResourceExhausted,
                 "the daemon's segment budget is exhausted: this stream needs " + wire::format_bytes(bytes) + ", " +
                     wire::format_bytes(in_use_) + " of " + wire::format_bytes(limit_) +
                     " (limits.max_shm_bytes) are held by open streams" +
                     (cache > 0 ? " and " + wire::format_bytes(cache) + " by the sample cache (batchctl cache; "
                                  "--drop frees it, cache.max_bytes bounds it)" : std::string()) +
                     "; close streams, ask for a smaller batch_size or depth, or raise limits.max_shm_bytes");
  }
  if (strategy == wire::FILE_SYSTEM) {
    const auto space = wire::shm_space(shm_dir_);
    if (!space) return posix_error("statvfs " + shm_dir_, errno);
    const uint64_t free_bytes = space->free_bytes;
    const uint64_t total = space->total_bytes;
    if (total > 0 && bytes > free_bytes) {  // a ramfs reports no size: it has no limit to check against
      return Error(ErrorCode::kResourceExhausted,
                   "this stream's segment needs " + wire::format_bytes(bytes) + " but " + shm_dir_ + " has only " +
                       wire::format_bytes(free_bytes) + " free of " + wire::format_bytes(total) +
                       "; raise its size (docker run --shm-size=8g, or mount -o remount,size=8G " + shm_dir_ +
                       "), ask for a smaller batch_size or depth, or use the file_descriptor strategy");
    }
  }
  return ok_status();
}

}  // namespace batchd::daemon
