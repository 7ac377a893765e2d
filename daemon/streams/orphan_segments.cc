#include "streams/orphan_segments.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

namespace batchd::daemon {

wire::GcOutcome remove_orphan_segments(const std::string& dir) {
  using Kind = wire::ShmEntry::Kind;
  auto entries = wire::scan_shm(dir);
  const bool any = std::any_of(entries.begin(), entries.end(), [](const wire::ShmEntry& e) {
    return e.kind == Kind::kOrphan || e.kind == Kind::kLegacy || e.kind == Kind::kUndecided;
  });
  if (!any) return {};
  wire::mark_in_use(entries, dir);
  auto outcome = wire::collect_garbage(std::move(entries), dir, wire::GcPolicy{.euid = ::geteuid()});
  for (const auto& e : outcome.removed) {
    spdlog::info("removed {}/{} ({}) of batchd instance {}, which is gone", dir, e.name, wire::format_bytes(e.bytes),
                 e.instance);
  }
  size_t legacy = 0;
  for (const auto& e : outcome.kept) {
    if (e.kind == Kind::kLegacy) {
      ++legacy;
    } else {
      spdlog::warn("kept {}/{}: {}", dir, e.name, e.note);
    }
  }
  if (legacy > 0) {
    spdlog::warn("kept {} segment(s) named batchd.<pid>.<id> in {} by an older batchd: nothing proves their daemon "
                 "gone; `batchctl shm` lists them and `batchctl shm --gc` removes those that no process uses",
                 legacy, dir);
  }
  return outcome;
}

}  // namespace batchd::daemon
