// shm_budget.h — admission control for segment memory, checked at OpenStream before anything is allocated.
//
// Two limits apply: the daemon's budget for all its segments together (limits.max_shm_bytes; 0 = half of the
// machine's physical memory), and, for the file_system strategy, the free space of the /dev/shm filesystem (a
// tmpfs whose size Docker sets with --shm-size, 64 MiB by default; a filesystem that reports no size, as ramfs,
// has no free-space limit). A refusal says how much was needed, how much there is, and how to get more. file_descriptor segments (memfd) are charged to memory, not to /dev/shm.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"

namespace batchd::daemon {

class ShmBudget final {
 public:
  // limit_bytes 0 = half of physical memory (sysconf(_SC_PHYS_PAGES)).
  explicit ShmBudget(uint64_t limit_bytes, std::string shm_dir = "/dev/shm");

  // May a new segment of `bytes` be created now?
  Status admit(uint64_t bytes, wire::SharingStrategy strategy) const;
  // Bytes held in the same budget by others (the sample cache's live bytes: config/cache_config.h), asked at admit().
  void set_also_held(std::function<uint64_t()> also_held) { also_held_ = std::move(also_held); }
  void add(uint64_t bytes) { in_use_ += bytes; }
  void remove(uint64_t bytes) { in_use_ -= bytes; }

  uint64_t in_use() const { return in_use_; }
  uint64_t limit() const { return limit_; }

 private:
  uint64_t limit_;
  std::string shm_dir_;
  uint64_t in_use_ = 0;
  std::function<uint64_t()> also_held_;
};

}  // namespace batchd::daemon
