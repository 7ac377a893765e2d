#include "batchd/wire/shm_scan.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "batchd/wire/unique_fd.h"

namespace batchd::wire {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "batchd.";

template <typename T>
bool parse_number(std::string_view text, T* out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

template <typename F>
void for_each_pid(F f) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (parse_number(e.path().filename().string(), &pid)) f(pid);
  }
}

ShmEntry::Kind kind_of(const ShmName& name, InstanceState state) {
  switch (name.kind) {
    case ShmName::Kind::kLegacySegment: return ShmEntry::Kind::kLegacy;
    case ShmName::Kind::kOther: return ShmEntry::Kind::kForeign;
    default: break;
  }
  switch (state) {
    case InstanceState::kLive: return ShmEntry::Kind::kLive;
    case InstanceState::kGone: return ShmEntry::Kind::kOrphan;
    default: return ShmEntry::Kind::kUndecided;
  }
}

// A batchd segment as /proc shows it: "/memfd:batchd.<...> (deleted)" or "<dir>/batchd.<...>", not a lock file.
bool is_segment_path(std::string path, const std::string& dir) {
  if (const auto del = path.rfind(" (deleted)"); del != std::string::npos) path.resize(del);
  const bool named = path.rfind("/memfd:batchd.", 0) == 0 || path.rfind(dir + "/batchd.", 0) == 0;
  return named && !path.ends_with(".lock");
}

}  // namespace

bool is_instance_id(std::string_view text) {
  return text.size() == kInstanceIdChars &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

ShmName parse_shm_name(std::string_view name) {
  ShmName out;
  if (name.substr(0, kPrefix.size()) != kPrefix) return out;
  name.remove_prefix(kPrefix.size());
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos) return out;
  const std::string_view owner = name.substr(0, dot), tail = name.substr(dot + 1);
  uint64_t id = 0;
  if (is_instance_id(owner)) {
    if (tail == "lock") {
      out.kind = ShmName::Kind::kInstanceLock;
    } else if (parse_number(tail, &id)) {
      out.kind = ShmName::Kind::kSegment;
      out.stream_id = id;
    } else {
      return out;
    }
    out.instance = std::string(owner);
    return out;
  }
  pid_t pid = 0;
  // Older daemons wrote decimal pids (at most 7 digits: pid_max <= 2^22), never 16 hex digits.
  if (parse_number(owner, &pid) && pid > 0 && parse_number(tail, &id)) {
    out.kind = ShmName::Kind::kLegacySegment;
    out.legacy_pid = pid;
    out.stream_id = id;
  }
  return out;
}

std::string segment_name(const std::string& instance, uint64_t stream_id) {
  return std::string(kPrefix) + instance + "." + std::to_string(stream_id);
}

std::string instance_lock_name(const std::string& instance) { return std::string(kPrefix) + instance + ".lock"; }

bool is_torch_leftover(const std::string& name) { return name.rfind("torch_", 0) == 0; }

InstanceState probe_instance(const std::string& dir, const std::string& instance, std::string* why) {
  const std::string path = dir + "/" + instance_lock_name(instance);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    if (errno == ENOENT) return InstanceState::kGone;  // created before the first segment, removed after the last
    if (why) *why = "cannot open its lock " + path + ": " + std::strerror(errno);
    return InstanceState::kUndecided;
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return InstanceState::kGone;  // released when fd closes
  if (errno == EWOULDBLOCK) return InstanceState::kLive;
  if (why) *why = "cannot test its lock " + path + ": " + std::strerror(errno);
  return InstanceState::kUndecided;
}

std::vector<ShmEntry> scan_shm(const std::string& dir) {
  std::vector<ShmEntry> out;
  std::map<std::string, std::pair<InstanceState, std::string>> probed;
  const time_t now = std::time(nullptr);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    ShmEntry entry;
    entry.name = e.path().filename().string();
    entry.bytes = static_cast<uint64_t>(st.st_size);
    entry.age_seconds = std::difftime(now, st.st_mtime);
    entry.owner_uid = st.st_uid;
    const ShmName name = parse_shm_name(entry.name);
    entry.lock_file = name.kind == ShmName::Kind::kInstanceLock;
    entry.instance = name.instance;
    entry.legacy_pid = name.legacy_pid;
    InstanceState state = InstanceState::kUndecided;
    if (!name.instance.empty()) {
      auto it = probed.find(name.instance);
      if (it == probed.end()) {
        std::string why;
        const InstanceState s = probe_instance(dir, name.instance, &why);
        it = probed.emplace(name.instance, std::make_pair(s, why)).first;
      }
      state = it->second.first;
      entry.note = it->second.second;
    }
    entry.kind = kind_of(name, state);
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

GcDecision gc_decision(const ShmEntry& e, const GcPolicy& policy) {
  using Action = GcDecision::Action;
  switch (e.kind) {
    case ShmEntry::Kind::kLive: return {Action::kIgnore, ""};
    case ShmEntry::Kind::kForeign:
      if (!policy.include_foreign || !is_torch_leftover(e.name)) return {Action::kIgnore, ""};
      break;
    case ShmEntry::Kind::kUndecided:
      return {Action::kKeep, "cannot tell whether batchd instance " + e.instance + " is gone: " + e.note};
    case ShmEntry::Kind::kLegacy:
      if (!policy.include_legacy) {
        return {Action::kKeep, "named after the pid of an older batchd, which cannot prove that daemon gone; "
                               "`batchctl shm --gc` removes it once no process has it open or mapped"};
      }
      break;
    case ShmEntry::Kind::kOrphan: break;
  }
  if (e.in_use) return {Action::kKeep, "open or mapped by a running process"};
  if (policy.euid != 0 && e.owner_uid != policy.euid) {
    return {Action::kKeep, "owned by uid " + std::to_string(e.owner_uid) + ": uid " + std::to_string(policy.euid) +
                               " cannot see other users' processes, so cannot prove it unused; run as root or as uid " +
                               std::to_string(e.owner_uid)};
  }
  return {Action::kRemove, ""};
}

GcOutcome collect_garbage(std::vector<ShmEntry> entries, const std::string& dir, const GcPolicy& policy) {
  // Segments first: a gone instance's lock file goes last (a missing lock file also means "gone", so this order
  // is tidiness, not safety).
  std::stable_partition(entries.begin(), entries.end(), [](const ShmEntry& e) { return !e.lock_file; });
  GcOutcome out;
  for (auto& e : entries) {
    const GcDecision d = gc_decision(e, policy);
    if (d.action == GcDecision::Action::kIgnore) continue;
    if (d.action == GcDecision::Action::kKeep) {
      e.note = d.reason;
      out.kept.push_back(std::move(e));
      continue;
    }
    const std::string path = (fs::path(dir) / e.name).string();
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) {
      out.removed.push_back(std::move(e));
    } else {
      e.note = std::string("cannot remove it: ") + std::strerror(errno);
      out.kept.push_back(std::move(e));
    }
  }
  return out;
}

int count_segment_fds(pid_t pid, const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec);
  if (ec) return -1;
  int n = 0;
  for (const auto& fd : it) {
    std::error_code lec;
    if (is_segment_path(fs::read_symlink(fd.path(), lec).string(), dir)) ++n;
  }
  return n;
}

int count_segment_mappings(pid_t pid, const std::string& dir) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return -1;
  std::set<std::string> segments;
  std::string line;
  while (std::getline(maps, line)) {
    if (const auto p = line.find('/'); p != std::string::npos && is_segment_path(line.substr(p), dir)) {
      segments.insert(line.substr(p));
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
