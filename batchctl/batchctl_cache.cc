#include "batchctl_cache.h"

#include <cstdio>

#include "batchctl_views.h"

#include "batchd/wire/shm_scan.h"

namespace batchd::ctl {

namespace {

std::string rate(uint64_t hits, uint64_t all) {
  if (all == 0) return "-";
  char text[16];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(hits) / static_cast<double>(all));
  return text;
}

}  // namespace

void print_cache(const DaemonStatus& st, const std::string& dataset) {
  const CacheStatus& c = st.cache;
  if (!c.enabled) {
    std::printf("sample cache: off (cache.max_bytes = 0): cache points are computed every time; %llu samples so\n",
                static_cast<unsigned long long>(c.uncached));
    return;
  }
  const uint64_t served = c.hits + c.fills + c.uncached;
  std::printf("sample cache: %s of %s used (cache.max_bytes; index included), %s resident, %s per uid for client "
              "specs\n",
              wire::format_bytes(c.live_bytes).c_str(), wire::format_bytes(c.max_bytes).c_str(),
              wire::format_bytes(c.resident_bytes).c_str(), wire::format_bytes(c.max_bytes_per_uid).c_str());
  std::printf("samples: %llu hits, %llu filled, %llu uncached (hit rate %s); index %llu of %llu slots; "
              "refused: %llu full, %llu uid share, %llu index; dropped %s since start\n",
              static_cast<unsigned long long>(c.hits), static_cast<unsigned long long>(c.fills),
              static_cast<unsigned long long>(c.uncached), rate(c.hits, served).c_str(),
              static_cast<unsigned long long>(c.index_used), static_cast<unsigned long long>(c.index_slots),
              static_cast<unsigned long long>(c.refused_full), static_cast<unsigned long long>(c.refused_uid),
              static_cast<unsigned long long>(c.refused_index), wire::format_bytes(c.dropped_bytes).c_str());
  std::printf("segments: %llu of %llu free; evicted %s to free them; churn %s still charged to its uids\n",
              static_cast<unsigned long long>(c.segments_free), static_cast<unsigned long long>(c.segments),
              wire::format_bytes(c.evicted_bytes).c_str(), wire::format_bytes(c.churn_bytes).c_str());
  if (!st.admin) {
    std::printf("(the groups by dataset and ops are shown to admins)\n");
    return;
  }
  if (c.groups.empty()) {
    std::printf("no entries\n");
    return;
  }
  std::printf("%-20s %-5s %9s %10s %8s %8s %8s %6s  %s\n", "DATASET", "LOAD", "ENTRIES", "BYTES", "FILLED", "HITS",
              "UNCACHED", "RATE", "OPS BEFORE THE POINT");
  for (const auto& g : c.groups) {
    if (!dataset.empty() && g.dataset != dataset) continue;
    char filled[16] = "-";
    if (g.dataset_samples > 0) {
      std::snprintf(filled, sizeof filled, "%.1f%%", 100.0 * static_cast<double>(g.entries) /
                                                         static_cast<double>(g.dataset_samples));
    }
    std::printf("%-20s %-5s %9llu %10s %8s %8llu %8llu %6s  %s\n", g.dataset.c_str(),
                (std::to_string(g.load) + (g.current ? "" : "*")).c_str(), static_cast<unsigned long long>(g.entries),
                wire::format_bytes(g.bytes).c_str(), filled, static_cast<unsigned long long>(g.hits),
                static_cast<unsigned long long>(g.uncached), rate(g.hits, g.hits + g.fills + g.uncached).c_str(),
                g.prefix.c_str());
  }
  std::printf("(LOAD*: an older load of the dataset, which no new stream reads; FILLED: entries / samples)\n");
}

void print_cache_memory(const CacheStatus& c) {
  if (!c.enabled) return;
  std::printf("sample cache: %s resident, %s of %s used (a memfd of the daemon's: no file in /dev/shm, gone with "
              "it; counted in limits.max_shm_bytes; batchctl cache)\n",
              wire::format_bytes(c.resident_bytes).c_str(), wire::format_bytes(c.live_bytes).c_str(),
              wire::format_bytes(c.max_bytes).c_str());
}

int run_cache(const ConnectOptions& connect, const std::string& dataset, bool json) {
  auto admin = Admin::connect(connect);
  // After the last possible stream id: the reply lists no stream, only the totals and the cache.
  auto st = admin.ok() ? admin->status_page(~uint64_t{0}, /*cache_groups=*/true) : Result<DaemonStatus>(admin.error());
  if (!st.ok()) {
    std::fprintf(stderr, "batchctl: %s\n", st.error().message().c_str());
    return 1;
  }
  if (json) {
    DaemonStatus view;  // only the cache, every other field at its default (as batchctl streams --json)
    view.cache = st->cache;
    return print_json(to_json(view));
  }
  print_cache(*st, dataset);
  return 0;
}

int run_cache_drop(const ConnectOptions& connect, const std::string& dataset) {
  auto admin = Admin::connect(connect);
  auto dropped = admin.ok() ? admin->drop_cache(dataset) : Result<CacheDropped>(admin.error());
  if (!dropped.ok()) {
    std::fprintf(stderr, "batchctl: %s\n", dropped.error().message().c_str());
    return 1;
  }
  std::printf("dropped %llu entries (%s) of %s\n", static_cast<unsigned long long>(dropped->entries),
              wire::format_bytes(dropped->bytes).c_str(),
              dataset.empty() ? "every dataset" : ("dataset " + dataset).c_str());
  return 0;
}

}  // namespace batchd::ctl
