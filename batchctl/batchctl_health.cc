#include "batchctl_health.h"

#include <cstdio>

#include "batchd/admin.h"

namespace batchd::ctl {

int run_health(const ConnectOptions& connect, bool live) {
  auto admin = Admin::connect(connect);
  auto health = admin.ok() ? admin->health() : Result<DaemonHealth>(admin.error());
  if (!health.ok()) {
    std::fprintf(stderr, "batchctl: %s\n", health.error().message().c_str());
    return 1;
  }
  const DaemonHealth& h = *health;
  std::string why_not_ready;
  if (h.draining) {
    why_not_ready = "it is draining (batchctl drain): new streams are refused, running ones continue";
  } else if (h.workers > 0 && h.workers_down == h.workers) {
    why_not_ready = "none of its " + std::to_string(h.workers) +
                    " worker processes is running (their replacements could not be started: see its log)";
  }
  const bool ok = live || why_not_ready.empty();
  std::printf("%s: batchd %s, pid %d, instance %s, up %.0f s, %u workers (%u down)%s%s\n",
              !ok ? "not ready" : live ? "alive" : "ready", h.version.c_str(), h.daemon_pid, h.instance_id.c_str(),
              h.uptime_seconds, h.workers, h.workers_down, why_not_ready.empty() ? "" : "; ", why_not_ready.c_str());
  return ok ? 0 : 1;
}

}  // namespace batchd::ctl
