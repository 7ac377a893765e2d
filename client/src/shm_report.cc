// shm_report() of batchd/admin.h: the daemon's live segments (when it answers) and what a scan of the shm
// directory finds either way (proto's wire/shm_scan.h), with the optional garbage collection under that file's rule
// (gc_decision), as the caller's effective uid.
#include <unistd.h>

#include <map>
#include <set>

#include "batchd/admin.h"
#include "batchd/wire/shm_scan.h"

namespace batchd {

namespace {

using wire::ShmEntry;

ShmFile file_of(const ShmEntry& e) {
  return {.name = e.name, .bytes = e.bytes, .age_seconds = e.age_seconds, .daemon_pid = e.legacy_pid,
          .in_use = e.in_use, .instance_id = e.instance, .owner_uid = e.owner_uid, .kept = e.note};
}

// The daemon's part: its live segments and the processes that hold them.
void add_daemon_part(const ShmReportOptions& options, ShmReport* report) {
  ConnectOptions connect;
  connect.socket_path = options.socket_path;
  connect.request_timeout = options.request_timeout;
  auto admin = Admin::connect(connect);
  auto status = admin.ok() ? admin->status() : Result<DaemonStatus>(admin.error());
  if (!status.ok()) {
    report->daemon_error = status.error().message();
    return;
  }
  report->daemon_reachable = true;
  report->daemon_pid = status->daemon_pid;
  report->instance_id = status->instance_id;
  report->segments = std::move(status->segments);
  std::set<pid_t> owners;
  for (const auto& s : report->segments) owners.insert(s.owner_pid);
  for (pid_t pid : owners) {
    report->clients.push_back({.pid = pid,
                               .segment_fds = wire::count_segment_fds(pid, options.shm_dir),
                               .segment_mappings = wire::count_segment_mappings(pid, options.shm_dir)});
  }
}

void list(const ShmEntry& e, ShmReport* report) {
  switch (e.kind) {
    case ShmEntry::Kind::kOrphan: report->orphans.push_back(file_of(e)); break;
    case ShmEntry::Kind::kLegacy: report->legacy.push_back(file_of(e)); break;
    case ShmEntry::Kind::kUndecided: report->undecided.push_back(file_of(e)); break;
    case ShmEntry::Kind::kForeign: report->foreign.push_back(file_of(e)); break;
    case ShmEntry::Kind::kLive: break;  // the daemon's are in segments; other live instances' are not ours to list
  }
}

}  // namespace

ShmReport shm_report(const ShmReportOptions& options) {
  ShmReport report;
  add_daemon_part(options, &report);
  auto entries = wire::scan_shm(options.shm_dir);
  wire::mark_in_use(entries, options.shm_dir);
  if (options.gc) {
    const wire::GcPolicy policy{.euid = ::geteuid(), .include_legacy = true, .include_foreign = options.include_foreign};
    auto outcome = wire::collect_garbage(entries, options.shm_dir, policy);
    std::set<std::string> removed;
    for (const auto& e : outcome.removed) {
      report.removed.push_back(e.name);
      removed.insert(e.name);
    }
    std::erase_if(entries, [&](const ShmEntry& e) { return removed.count(e.name) > 0; });
    std::map<std::string, std::string> kept;
    for (const auto& e : outcome.kept) kept[e.name] = e.note;
    for (auto& e : entries) {
      if (auto it = kept.find(e.name); it != kept.end()) e.note = it->second;
    }
  }
  for (const auto& e : entries) list(e, &report);
  if (const auto space = wire::shm_space(options.shm_dir)) {
    report.shm_total_bytes = space->total_bytes;
    report.shm_free_bytes = space->free_bytes;
  }
  return report;
}

}  // namespace batchd
