// shm_report() of batchd/admin.h: the daemon's live segments (when it answers) and what a scan of the shm
// directory finds either way (proto's wire/shm_scan.h), with the optional garbage collection under that file's rule
// (gc_decision), as the caller's effective uid. Other instances whose lock is held are listed with the lock's holder
// (wire/lock_holder.h): a process keeping a dead instance's lock shows as the leak it is.
#include <unistd.h>

#include <map>
#include <set>

#include "batchd/admin.h"
#include "batchd/wire/lock_holder.h"
#include "batchd/wire/shm_scan.h"

namespace batchd {

namespace {

using wire::ShmEntry;

ShmFile file_of(const ShmEntry& e) {
  return {.name = e.name, .bytes = e.bytes, .age_seconds = e.age_seconds, .daemon_pid = e.legacy_pid,
          .in_use = e.in_use, .instance_id = e.instance, .owner_uid = e.owner_uid, .kept = e.note,
          .lock_holder_pid = 0, .lock_holder = ""};
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
    report->segments_missing = admin.ok();  // a daemon took the connection: it has segments this report lacks
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

// A file of another instance whose lock is held: who holds it (looked up once per instance in `holders`).
using Holders = std::map<std::string, std::optional<wire::LockHolder>>;  // by instance

ShmFile held_file(const ShmEntry& e, const std::string& dir, Holders* holders) {
  auto it = holders->find(e.instance);
  if (it == holders->end()) {
    it = holders->emplace(e.instance, wire::flock_holder(dir + "/" + wire::instance_lock_name(e.instance))).first;
  }
  ShmFile f = file_of(e);
  const std::string who = it->second ? wire::describe(*it->second) : "a process this user cannot see";
  f.kept = "instance " + e.instance + "'s lock is held by " + who +
           ": another batchd running, or a process keeping a dead instance's lock; not collected while it is held";
  if (it->second) {
    f.lock_holder_pid = it->second->pid;
    f.lock_holder = it->second->name;
  }
  return f;
}

void list(const ShmEntry& e, const ShmReportOptions& options, ShmReport* report, Holders* holders) {
  switch (e.kind) {
    case ShmEntry::Kind::kOrphan: report->orphans.push_back(file_of(e)); break;
    case ShmEntry::Kind::kLegacy: report->legacy.push_back(file_of(e)); break;
    case ShmEntry::Kind::kUndecided: report->undecided.push_back(file_of(e)); break;
    case ShmEntry::Kind::kForeign: report->foreign.push_back(file_of(e)); break;
    case ShmEntry::Kind::kLive:  // the reachable daemon's are in segments; any other instance's are held
      if (e.instance != report->instance_id) report->held.push_back(held_file(e, options.shm_dir, holders));
      break;
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
  Holders holders;
  for (const auto& e : entries) list(e, options, &report, &holders);
  if (const auto space = wire::shm_space(options.shm_dir)) {
    report.shm_total_bytes = space->total_bytes;
    report.shm_free_bytes = space->free_bytes;
  }
  return report;
}

}  // namespace batchd
