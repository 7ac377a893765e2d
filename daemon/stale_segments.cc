#include "stale_segments.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>

namespace batchd::daemon {

namespace {

// Parses "batchd.<pid>.<id>"; returns the pid or 0.
pid_t owner_of(const std::string& name) {
  const std::string prefix = "batchd.";
  if (name.rfind(prefix, 0) != 0) return 0;
  const char* begin = name.data() + prefix.size();
  const char* end = name.data() + name.size();
  pid_t pid = 0;
  auto [p, ec] = std::from_chars(begin, end, pid);
  if (ec != std::errc() || p == end || *p != '.' || pid <= 0) return 0;
  uint64_t id = 0;
  auto [q, ec2] = std::from_chars(p + 1, end, id);
  if (ec2 != std::errc() || q != end) return 0;
  return pid;
}

}  // namespace

bool is_live_batchd(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  return comm && std::getline(comm, name) && name == "batchd";
}

std::vector<StaleSegment> find_stale_segments(const std::string& shm_dir) {
  std::vector<StaleSegment> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(shm_dir, ec)) {
    const std::string name = entry.path().filename().string();
    const pid_t pid = owner_of(name);
    if (pid == 0) continue;
    if (pid != ::getpid() && is_live_batchd(pid)) continue;
    std::error_code size_ec;
    const auto bytes = entry.file_size(size_ec);
    out.push_back({name, pid, size_ec ? 0 : static_cast<uint64_t>(bytes)});
  }
  return out;
}

std::vector<StaleSegment> remove_stale_segments(const std::string& shm_dir) {
  std::vector<StaleSegment> removed;
  for (auto& s : find_stale_segments(shm_dir)) {
    std::error_code ec;
    if (std::filesystem::remove(std::filesystem::path(shm_dir) / s.name, ec)) {
      spdlog::info("removed stale segment {}/{} ({} bytes) of batchd pid {}, which is gone", shm_dir, s.name,
                   s.bytes, s.daemon_pid);
      removed.push_back(std::move(s));
    } else if (ec) {
      spdlog::warn("cannot remove stale segment {}/{}: {}", shm_dir, s.name, ec.message());
    }
  }
  return removed;
}

}  // namespace batchd::daemon
