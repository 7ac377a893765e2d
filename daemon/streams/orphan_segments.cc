#include "streams/orphan_segments.h"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace batchd::daemon {

std::vector<wire::ShmEntry> remove_orphan_segments(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<wire::ShmEntry> removed;
  for (auto& e : wire::scan_shm(dir, /*self_is_daemon=*/true)) {
    if (e.kind != wire::ShmEntry::Kind::kOrphan) continue;
    std::error_code ec;
    if (fs::remove(fs::path(dir) / e.name, ec)) {
      spdlog::info("removed orphan segment {}/{} ({} bytes) of batchd pid {}, which is gone", dir, e.name, e.bytes,
                   e.daemon_pid);
      removed.push_back(std::move(e));
    } else if (ec) {
      spdlog::warn("cannot remove orphan segment {}/{}: {}", dir, e.name, ec.message());
    }
  }
  return removed;
}

}  // namespace batchd::daemon
