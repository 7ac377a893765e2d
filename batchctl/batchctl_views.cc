#include "batchctl_views.h"

#include <cstdio>
#include <map>
#include <string>

#include "batchd/wire/convert.h"
#include "batchd/wire/shm_scan.h"

namespace batchd::ctl {

namespace {

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// A stream's total for the BATCHES column: "endless" for an endless stream (OpenStream.endless).
std::string total_text(uint64_t total) {
  return total >= wire::kEndlessBatches ? "endless" : std::to_string(total);
}

// "N streams of other users ..." for a non-admin's view, or nothing.
void print_others(const DaemonStatus& st) {
  if (st.streams_of_others == 0) return;
  std::printf("%u stream%s of other users (%.1f MB of segments; only an admin sees them)\n", st.streams_of_others,
              st.streams_of_others == 1 ? "" : "s", static_cast<double>(st.segment_bytes_of_others) / 1e6);
}

}  // namespace

const char* strategy_name(SharingStrategy s) {
  return s == SharingStrategy::kFileSystem ? "file_system" : "file_descriptor";
}

int print_json(const Result<std::string>& json) {
  if (!json.ok()) {
    std::fprintf(stderr, "batchctl: %s\n", json.error().message().c_str());
    return 1;
  }
  std::printf("%s\n", json->c_str());
  return 0;
}

void print_workers(const DaemonStatus& st) {
  std::printf("%-8s %-6s %10s %9s %6s\n", "PID", "STATE", "BATCHES", "RESTARTS", "BUSY%");
  for (const auto& w : st.workers) {
    std::printf("%-8d %-6s %10llu %9llu %5.1f%%\n", w.pid, w.state.c_str(),
                static_cast<unsigned long long>(w.batches_done), static_cast<unsigned long long>(w.restarts),
                percent(w.busy_seconds, w.alive_seconds));
  }
}

void print_streams(const DaemonStatus& st) {
  if (st.streams.empty()) {
    std::printf("no streams%s\n", st.streams_of_others > 0 ? " of yours" : "");
    print_others(st);
    return;
  }
  std::printf("%-6s %-20s %-12s %6s %8s %-8s %-6s %13s %8s\n", "STREAM", "DATASET", "PIPELINE", "BATCH", "CLIENT",
              "STATE", "ERRORS", "BATCHES", "SKIPPED");
  for (const auto& s : st.streams) {
    std::printf("%-6llu %-20s %-12s %6u %8d %-8s %-6s %6llu/%-6s %8llu\n",
                static_cast<unsigned long long>(s.stream_id), s.dataset.c_str(), s.pipeline.c_str(), s.batch_size,
                s.client_pid, s.state.c_str(), s.on_error.c_str(),
                static_cast<unsigned long long>(s.batches_delivered), total_text(s.batches_total).c_str(),
                static_cast<unsigned long long>(s.samples_skipped));
    if (const auto& g = s.stages; g.cache_hits + g.cache_fills + g.cache_uncached > 0) {  // a cache point
      std::printf("       cache: %llu hits, %llu filled, %llu uncached\n", static_cast<unsigned long long>(g.cache_hits),
                  static_cast<unsigned long long>(g.cache_fills), static_cast<unsigned long long>(g.cache_uncached));
    }
    if (!s.external.empty()) {  // a trainer's own Dataset: its worker processes are the trainer's, attached here
      std::printf("       %s: %zu attached worker(s)", s.external.c_str(), s.attached_workers.size());
      const char* sep = " (pids ";
      for (const auto& w : s.attached_workers) {
        std::printf("%s%d", sep, w.pid);
        sep = " ";
      }
      std::printf("%s, %llu detached or lost\n", s.attached_workers.empty() ? "" : ")",
                  static_cast<unsigned long long>(s.workers_detached));
    }
    if (s.share.empty()) continue;
    // A shared production: listed once, its subscribers under it (BATCHES above: made and announced, once each).
    std::printf("       share '%s': %zu subscriber(s), %llu batches made (%llu remade for late subscribers), "
                "max_lag %u\n",
                s.share.c_str(), s.subscribers.size(), static_cast<unsigned long long>(s.batches_made),
                static_cast<unsigned long long>(s.batches_remade), s.max_lag);
    for (const auto& sub : s.subscribers) {
      std::printf("         pid %-8d uid %-6u %-8s %6llu/%-6llu held %u, lag %u, joined at epoch %llu batch %llu\n",
                  sub.client_pid, static_cast<unsigned>(sub.uid), sub.state.c_str(),
                  static_cast<unsigned long long>(sub.batches_delivered),
                  static_cast<unsigned long long>(sub.batches_total), sub.held, sub.lag,
                  static_cast<unsigned long long>(sub.joined_epoch),
                  static_cast<unsigned long long>(sub.joined_at_batch));
    }
  }
  print_others(st);
}

// Remote shards (issue 28): one line per remote dataset, and the shard cache's.
void print_remote_shards(const DaemonStatus& st) {
  auto n = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  bool any = false;
  for (const auto& d : st.dataset_entries) {
    const RemoteShardsStatus& r = d.remote;
    if (r.shards == 0) continue;
    if (!any) std::printf("\nremote shards (fetched once per host into the shard cache):\n");
    any = true;
    std::printf("  %-22s %llu of %llu shards here (%s of %s); fetched %llu (%s, %llu ahead of the tasks), waited for "
                "%llu, failed %llu, evicted %llu\n",
                d.name.c_str(), n(r.shards_here), n(r.shards), wire::format_bytes(r.bytes_here).c_str(),
                wire::format_bytes(r.bytes).c_str(), n(r.fetched), wire::format_bytes(r.fetched_bytes).c_str(),
                n(r.prefetched), n(r.waited), n(r.failed), n(r.evicted));
  }
  const RemoteCacheStatus& c = st.remote_cache;
  if (!c.enabled) return;
  std::printf("%sshard cache %s: %s of %s used (remote.cache_max_bytes), %llu files, %llu downloads under way\n",
              any ? "" : "\n", c.dir.c_str(), wire::format_bytes(c.bytes).c_str(), wire::format_bytes(c.max_bytes).c_str(),
              n(c.files), n(c.fetching));
}

void print_datasets(const DaemonStatus& st) {
  // The fingerprint's first 12 hex digits (48 bits) tell copies apart by eye; --json has all 32 and what they cover.
  std::printf("%-24s %-12s %-10s %10s  %-13s %s\n", "NAME", "FORMAT", "STATE", "SAMPLES", "FINGERPRINT", "DETAIL");
  for (const auto& d : st.dataset_entries) {
    const bool failed = d.fingerprint_status.rfind("failed", 0) == 0;
    const std::string fingerprint = d.state != "available"  ? std::string("-")
                                    : !d.fingerprint.empty() ? d.fingerprint.substr(0, 12)
                                    : failed                 ? std::string("(failed)")
                                                             : "(" + d.fingerprint_status + ")";
    std::string detail = d.detail;
    if (failed) detail += (detail.empty() ? "fingerprint " : "; fingerprint ") + d.fingerprint_status;
    std::printf("%-24s %-12s %-10s %10llu  %-13s %s\n", d.name.c_str(), d.format.c_str(), d.state.c_str(),
                static_cast<unsigned long long>(d.samples), fingerprint.c_str(), detail.c_str());
  }
  print_remote_shards(st);
}

void print_status(const DaemonStatus& st) {
  std::printf("batchd %s, pid %d, instance %s, up %.0f s, %u connections, default strategy %s%s\n",
              st.version.c_str(), st.daemon_pid, st.instance_id.c_str(), st.uptime_seconds, st.connections, strategy_name(st.default_strategy),
              st.draining ? ", DRAINING (new streams refused)" : "");
  if (!st.admin) {
    std::printf("you are not an admin of this daemon: other users' streams are only counted, drain and shutdown are "
                "refused\n");
  }
  std::printf("datasets: ");
  for (size_t i = 0; i < st.datasets.size(); ++i) std::printf("%s%s", i ? ", " : "", st.datasets[i].c_str());
  std::printf("\nbatches redone after a worker died: %llu\n\nworkers (%zu):\n",
              static_cast<unsigned long long>(st.batches_redone), st.workers.size());
  print_workers(st);
  std::printf("\nstreams (%zu):\n", st.streams.size());
  print_streams(st);
  std::printf("\nsegments (%zu): see batchctl shm\n", st.segments.size());
}

void print_stats(const DaemonStatus& now, const std::optional<DaemonStatus>& previous, double interval) {
  std::map<uint64_t, StreamStatus> before;
  if (previous) {
    for (const auto& s : previous->streams) before[s.stream_id] = s;
  }
  std::printf("%-6s %-20s %-10s %11s %10s %8s %8s %8s\n", "STREAM", "DATASET", "PIPELINE", "SAMPLES/S", "MB/S",
              "AHEAD%", "STALL%", "SKIPPED");
  for (const auto& s : now.streams) {
    StreamStatus base;  // zeros: rates over the stream's lifetime
    double dt = s.open_seconds;
    if (auto it = before.find(s.stream_id); it != before.end() && previous) {
      base = it->second;
      dt = interval;
    }
    const double samples = static_cast<double>(s.samples_delivered - base.samples_delivered);
    const double bytes = static_cast<double>(s.bytes_delivered - base.bytes_delivered);
    std::printf("%-6llu %-20s %-10s %11.0f %10.1f %7.1f%% %7.1f%% %8llu\n",
                static_cast<unsigned long long>(s.stream_id), s.dataset.c_str(), s.pipeline.c_str(),
                dt > 0 ? samples / dt : 0.0, dt > 0 ? bytes / dt / 1e6 : 0.0,
                percent(s.ahead_seconds - base.ahead_seconds, dt), percent(s.stall_seconds - base.stall_seconds, dt),
                static_cast<unsigned long long>(s.samples_skipped));
  }
  std::printf("\nAHEAD%%: every slot held a finished batch (the daemon waits for the client). STALL%%: the client\n"
              "held no batch and none was ready (the client waits for data).\n\n");
  print_workers(now);
}

}  // namespace batchd::ctl
