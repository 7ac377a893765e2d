#include "batchctl_shm.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "streams/shm_budget.h"
#include "streams/shm_scan.h"

namespace batchd::ctl {

namespace {

using daemon::ShmEntry;

wire::ShmFile to_file(const ShmEntry& e) {
  wire::ShmFile f;
  f.set_name(e.name);
  f.set_bytes(e.bytes);
  f.set_age_seconds(e.age_seconds);
  f.set_daemon_pid(e.daemon_pid);
  f.set_in_use(e.in_use);
  return f;
}

// PyTorch's file_system strategy names (torch_<pid>_<random>): the leftovers --include-foreign may remove.
bool is_torch_leftover(const std::string& name) { return name.rfind("torch_", 0) == 0; }

std::string age(double seconds) {
  char buf[32];
  if (seconds < 120) std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  else if (seconds < 7200) std::snprintf(buf, sizeof(buf), "%.0fm", seconds / 60);
  else if (seconds < 172800) std::snprintf(buf, sizeof(buf), "%.0fh", seconds / 3600);
  else std::snprintf(buf, sizeof(buf), "%.0fd", seconds / 86400);
  return buf;
}

const char* strategy(wire::SharingStrategy s) { return s == wire::FILE_SYSTEM ? "file_system" : "file_descriptor"; }

}  // namespace

wire::ShmReport shm_report(const std::optional<wire::StatusReply>& status, const std::string& daemon_error,
                           const ShmOptions& options) {
  wire::ShmReport report;
  report.set_daemon_reachable(status.has_value());
  if (status) {
    report.set_daemon_pid(status->daemon_pid());
    *report.mutable_segments() = status->segments();
    std::set<int32_t> owners;
    for (const auto& s : status->segments()) owners.insert(s.owner_pid());
    for (int32_t pid : owners) {
      auto* c = report.add_clients();
      c->set_pid(pid);
      c->set_segment_fds(daemon::count_segment_fds(pid, options.shm_dir));
      c->set_segment_mappings(daemon::count_segment_mappings(pid, options.shm_dir));
    }
  } else {
    report.set_daemon_error(daemon_error);
  }
  auto entries = daemon::scan_shm(options.shm_dir);
  daemon::mark_in_use(entries, options.shm_dir);
  for (const auto& e : entries) {
    const bool remove = options.gc && (e.kind == ShmEntry::Kind::kOrphan ||
                                       (options.include_foreign && e.kind == ShmEntry::Kind::kForeign &&
                                        is_torch_leftover(e.name) && !e.in_use));
    if (remove) {
      std::error_code ec;
      if (std::filesystem::remove(std::filesystem::path(options.shm_dir) / e.name, ec)) {
        report.add_removed(e.name);
        continue;
      }
    }
    if (e.kind == ShmEntry::Kind::kOrphan) *report.add_orphans() = to_file(e);
    if (e.kind == ShmEntry::Kind::kForeign) *report.add_foreign() = to_file(e);
  }
  struct statvfs vfs {};
  if (::statvfs(options.shm_dir.c_str(), &vfs) == 0) {
    report.set_shm_total_bytes(static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize);
    report.set_shm_free_bytes(static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize);
  }
  return report;
}

void print_shm_report(const wire::ShmReport& r) {
  using daemon::format_bytes;
  std::printf("/dev/shm: %s free of %s\n\n", format_bytes(r.shm_free_bytes()).c_str(),
              format_bytes(r.shm_total_bytes()).c_str());
  if (!r.daemon_reachable()) {
    std::printf("daemon: not reachable (%s); showing what /dev/shm holds\n\n", r.daemon_error().c_str());
  } else if (r.segments_size() == 0) {
    std::printf("live segments of batchd pid %d: none\n\n", r.daemon_pid());
  } else {
    std::printf("live segments of batchd pid %d:\n", r.daemon_pid());
    std::printf("  %-6s %-30s %-16s %10s %8s %6s %6s  %s\n", "STREAM", "SEGMENT", "STRATEGY", "SIZE", "PID", "UID",
                "AGE", "SLOTS");
    for (const auto& s : r.segments()) {
      std::printf("  %-6llu %-30s %-16s %10s %8d %6u %6s  %u leased, %u ready, %u working, %u free\n",
                  static_cast<unsigned long long>(s.stream_id()), s.name().c_str(), strategy(s.strategy()),
                  format_bytes(s.bytes()).c_str(), s.owner_pid(), s.owner_uid(), age(s.age_seconds()).c_str(),
                  s.slots_leased(), s.slots_ready(), s.slots_working(), s.slots_free());
    }
    std::printf("  clients:\n");
    for (const auto& c : r.clients()) {
      if (c.segment_fds() < 0) {
        std::printf("    pid %-8d (its /proc is not readable by this user)\n", c.pid());
      } else {
        std::printf("    pid %-8d %d segment fds open, %d segments mapped\n", c.pid(), c.segment_fds(),
                    c.segment_mappings());
      }
    }
    std::printf("\n");
  }
  std::printf("orphans (batchd segments whose daemon is gone): %s\n", r.orphans_size() ? "" : "none");
  for (const auto& f : r.orphans()) {
    std::printf("  %-40s %10s %6s  daemon pid %d gone%s\n", f.name().c_str(), format_bytes(f.bytes()).c_str(),
                age(f.age_seconds()).c_str(), f.daemon_pid(), f.in_use() ? ", still mapped by a client" : "");
  }
  if (r.orphans_size()) std::printf("  remove with: batchctl shm --gc\n");
  std::printf("foreign files: %s\n", r.foreign_size() ? "" : "none");
  for (const auto& f : r.foreign()) {
    std::printf("  %-40s %10s %6s  %s%s\n", f.name().c_str(), format_bytes(f.bytes()).c_str(),
                age(f.age_seconds()).c_str(), f.in_use() ? "in use" : "not in use",
                is_torch_leftover(f.name()) && !f.in_use() ? " (PyTorch leftover: --gc --include-foreign)" : "");
  }
  for (const auto& name : r.removed()) std::printf("removed /dev/shm/%s\n", name.c_str());
}

}  // namespace batchd::ctl
