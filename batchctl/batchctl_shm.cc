#include "batchctl_shm.h"

#include <cstdio>

#include "batchctl_views.h"
#include "batchd/wire/shm_scan.h"

namespace batchd::ctl {

namespace {

std::string age(double seconds) {
  char buf[32];
  if (seconds < 120) std::snprintf(buf, sizeof(buf), "%.0fs", seconds);
  else if (seconds < 7200) std::snprintf(buf, sizeof(buf), "%.0fm", seconds / 60);
  else if (seconds < 172800) std::snprintf(buf, sizeof(buf), "%.0fh", seconds / 3600);
  else std::snprintf(buf, sizeof(buf), "%.0fd", seconds / 86400);
  return buf;
}

// A file that --gc considered and left, with the reason.
void print_kept(const ShmFile& f) {
  if (!f.kept.empty()) std::printf("    kept: %s\n", f.kept.c_str());
}

}  // namespace

void print_shm_report(const ShmReport& r) {
  using wire::format_bytes;
  std::printf("/dev/shm: %s free of %s\n\n", format_bytes(r.shm_free_bytes).c_str(),
              format_bytes(r.shm_total_bytes).c_str());
  if (r.segments_missing) {
    std::printf("daemon: it took the connection but did not list its live segments (%s): they are MISSING from this "
                "report; showing what /dev/shm holds\n\n", r.daemon_error.c_str());
  } else if (!r.daemon_reachable) {
    std::printf("daemon: not reachable (%s); showing what /dev/shm holds\n\n", r.daemon_error.c_str());
  } else if (r.segments.empty()) {
    std::printf("live segments of batchd pid %d (instance %s): none\n\n", r.daemon_pid, r.instance_id.c_str());
  } else {
    std::printf("live segments of batchd pid %d (instance %s):\n", r.daemon_pid, r.instance_id.c_str());
    std::printf("  %-6s %-30s %-16s %10s %8s %6s %6s  %s\n", "STREAM", "SEGMENT", "STRATEGY", "SIZE", "PID", "UID",
                "AGE", "SLOTS");
    for (const auto& s : r.segments) {
      std::printf("  %-6llu %-30s %-16s %10s %8d %6u %6s  %u leased, %u ready, %u working, %u free\n",
                  static_cast<unsigned long long>(s.stream_id), s.name.c_str(), strategy_name(s.strategy),
                  format_bytes(s.bytes).c_str(), s.owner_pid, s.owner_uid, age(s.age_seconds).c_str(),
                  s.slots_leased, s.slots_ready, s.slots_working, s.slots_free);
      if (!s.share.empty()) {
        std::printf("  %-6s shared as '%s' by %u stream(s): counted once\n", "", s.share.c_str(), s.subscribers);
      }
    }
    std::printf("  clients:\n");
    for (const auto& c : r.clients) {
      if (c.segment_fds < 0) {
        std::printf("    pid %-8d (its /proc is not readable by this user)\n", c.pid);
      } else {
        std::printf("    pid %-8d %d segment fds open, %d segments mapped\n", c.pid, c.segment_fds,
                    c.segment_mappings);
      }
    }
    std::printf("\n");
  }
  std::printf("orphans (segments and locks of batchd instances that are gone): %s\n", r.orphans.empty() ? "none" : "");
  for (const auto& f : r.orphans) {
    std::printf("  %-40s %10s %6s  instance %s gone%s\n", f.name.c_str(), format_bytes(f.bytes).c_str(),
                age(f.age_seconds).c_str(), f.instance_id.c_str(), f.in_use ? ", still mapped by a client" : "");
    print_kept(f);
  }
  const bool collected = !r.removed.empty() || (!r.orphans.empty() && !r.orphans.front().kept.empty());
  if (!r.orphans.empty() && !collected) std::printf("  remove with: batchctl shm --gc\n");
  if (!r.legacy.empty()) std::printf("named by an older batchd (batchd.<pid>.<id>; --gc removes those not in use):\n");
  for (const auto& f : r.legacy) {
    std::printf("  %-40s %10s %6s  %s\n", f.name.c_str(), format_bytes(f.bytes).c_str(), age(f.age_seconds).c_str(),
                f.in_use ? "in use" : "not in use");
    print_kept(f);
  }
  if (!r.undecided.empty()) std::printf("batchd files whose instance cannot be probed (never removed):\n");
  for (const auto& f : r.undecided) {
    std::printf("  %-40s %10s %6s  %s\n", f.name.c_str(), format_bytes(f.bytes).c_str(), age(f.age_seconds).c_str(),
                f.kept.c_str());
  }
  if (!r.held.empty()) {
    std::printf("other batchd instances whose lock a process holds (never removed; a dead instance's stay until its "
                "holder exits):\n");
  }
  for (const auto& f : r.held) {
    std::printf("  %-40s %10s %6s  %s\n", f.name.c_str(), format_bytes(f.bytes).c_str(), age(f.age_seconds).c_str(),
                f.kept.c_str());
  }
  std::printf("foreign files: %s\n", r.foreign.empty() ? "none" : "");
  for (const auto& f : r.foreign) {
    std::printf("  %-40s %10s %6s  %s%s\n", f.name.c_str(), format_bytes(f.bytes).c_str(),
                age(f.age_seconds).c_str(), f.in_use ? "in use" : "not in use",
                wire::is_torch_leftover(f.name) && !f.in_use ? " (PyTorch leftover: --gc --include-foreign)" : "");
    print_kept(f);
  }
  for (const auto& name : r.removed) std::printf("removed /dev/shm/%s\n", name.c_str());
}

}  // namespace batchd::ctl
