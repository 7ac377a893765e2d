// shm_report() of batchd/admin.h: the daemon's live segments (when it answers) and what a scan of the shm
// directory finds either way (proto's wire/shm_scan.h), with the optional garbage collection.
#include <filesystem>
#include <set>

#include "batchd/admin.h"
#include "batchd/wire/shm_scan.h"

namespace batchd {

namespace {

using wire::ShmEntry;

ShmFile file_of(const ShmEntry& e) {
  return {.name = e.name, .bytes = e.bytes, .age_seconds = e.age_seconds, .daemon_pid = e.daemon_pid,
          .in_use = e.in_use};
}

bool removable(const ShmEntry& e, const ShmReportOptions& options) {
  if (!options.gc) return false;
  if (e.kind == ShmEntry::Kind::kOrphan) return true;
  return options.include_foreign && e.kind == ShmEntry::Kind::kForeign && wire::is_torch_leftover(e.name) && !e.in_use;
}

// The daemon's part: its live segments and the processes that hold them.
void add_daemon_part(const ShmReportOptions& options, ShmReport* report) {
  auto admin = Admin::connect(options.socket_path);
  auto status = admin.ok() ? admin->status() : Result<DaemonStatus>(admin.error());
  if (!status.ok()) {
    report->daemon_error = status.error().message();
    return;
  }
  report->daemon_reachable = true;
  report->daemon_pid = status->daemon_pid;
  report->segments = std::move(status->segments);
  std::set<pid_t> owners;
  for (const auto& s : report->segments) owners.insert(s.owner_pid);
  for (pid_t pid : owners) {
    report->clients.push_back({.pid = pid,
                               .segment_fds = wire::count_segment_fds(pid, options.shm_dir),
                               .segment_mappings = wire::count_segment_mappings(pid, options.shm_dir)});
  }
}

}  // namespace

ShmReport shm_report(const ShmReportOptions& options) {
  ShmReport report;
  add_daemon_part(options, &report);
  auto entries = wire::scan_shm(options.shm_dir);
  wire::mark_in_use(entries, options.shm_dir);
  for (const auto& e : entries) {
    if (removable(e, options)) {
      std::error_code ec;
      if (std::filesystem::remove(std::filesystem::path(options.shm_dir) / e.name, ec)) {
        report.removed.push_back(e.name);
        continue;
      }
    }
    if (e.kind == ShmEntry::Kind::kOrphan) report.orphans.push_back(file_of(e));
    if (e.kind == ShmEntry::Kind::kForeign) report.foreign.push_back(file_of(e));
  }
  if (const auto space = wire::shm_space(options.shm_dir)) {
    report.shm_total_bytes = space->total_bytes;
    report.shm_free_bytes = space->free_bytes;
  }
  return report;
}

}  // namespace batchd
