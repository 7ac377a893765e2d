#include "batchd/wire/shm_scan.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace batchd::wire {

namespace fs = std::filesystem;

namespace {

// Parses "batchd.<pid>.<id>"; returns the pid or 0.
pid_t owner_of(const std::string& name) {
  const std::string prefix = "batchd.";
  if (name.rfind(prefix, 0) != 0) return 0;
  const char* end = name.data() + name.size();
  pid_t pid = 0;
  auto [p, ec] = std::from_chars(name.data() + prefix.size(), end, pid);
  if (ec != std::errc() || p == end || *p != '.' || pid <= 0) return 0;
  uint64_t id = 0;
  auto [q, ec2] = std::from_chars(p + 1, end, id);
  if (ec2 != std::errc() || q != end) return 0;
  return pid;
}

template <typename F>
void for_each_pid(F f) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    const std::string n = e.path().filename().string();
    auto [p, err] = std::from_chars(n.data(), n.data() + n.size(), pid);
    if (err == std::errc() && p == n.data() + n.size()) f(pid);
  }
}

}  // namespace

bool is_torch_leftover(const std::string& name) { return name.rfind("torch_", 0) == 0; }

bool is_live_batchd(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  return comm && std::getline(comm, name) && name == "batchd";
}

std::vector<ShmEntry> scan_shm(const std::string& dir, bool self_is_daemon) {
  std::vector<ShmEntry> out;
  const time_t now = std::time(nullptr);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    ShmEntry entry;
    entry.name = e.path().filename().string();
    entry.bytes = static_cast<uint64_t>(st.st_size);
    entry.age_seconds = std::difftime(now, st.st_mtime);
    entry.daemon_pid = owner_of(entry.name);
    if (entry.daemon_pid == 0) {
      entry.kind = ShmEntry::Kind::kForeign;
    } else if (self_is_daemon && entry.daemon_pid == ::getpid()) {
      entry.kind = ShmEntry::Kind::kOrphan;
    } else {
      entry.kind = is_live_batchd(entry.daemon_pid) ? ShmEntry::Kind::kLive : ShmEntry::Kind::kOrphan;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

void mark_in_use(std::vector<ShmEntry>& entries, const std::string& dir) {
  std::map<std::string, ShmEntry*> by_path;
  for (auto& e : entries) by_path[(fs::path(dir) / e.name).string()] = &e;
  auto mark = [&](std::string path) {
    if (const auto del = path.rfind(" (deleted)"); del != std::string::npos) path.resize(del);
    if (auto it = by_path.find(path); it != by_path.end()) it->second->in_use = true;
  };
  for_each_pid([&](pid_t pid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator(proc + "/fd", ec)) {
      std::error_code lec;
      mark(fs::read_symlink(fd.path(), lec).string());
    }
    std::ifstream maps(proc + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      if (const auto p = line.find(dir + "/"); p != std::string::npos) mark(line.substr(p));
    }
  });
}

int count_segment_fds(pid_t pid, const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec);
  if (ec) return -1;
  int n = 0;
  for (const auto& fd : it) {
    std::error_code lec;
    const std::string target = fs::read_symlink(fd.path(), lec).string();
    if (target.rfind("/memfd:batchd.", 0) == 0 || target.rfind(dir + "/batchd.", 0) == 0) ++n;
  }
  return n;
}

int count_segment_mappings(pid_t pid, const std::string& dir) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return -1;
  std::set<std::string> segments;
  std::string line;
  while (std::getline(maps, line)) {
    for (const std::string& marker : {std::string("/memfd:batchd."), dir + "/batchd."}) {
      if (const auto p = line.find(marker); p != std::string::npos) segments.insert(line.substr(p));
    }
  }
  return static_cast<int>(segments.size());
}

std::optional<ShmSpace> shm_space(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) return std::nullopt;
  return ShmSpace{static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize,
                  static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize};
}

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

}  // namespace batchd::wire
