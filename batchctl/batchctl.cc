// batchctl — the batchd admin command.
//
//   batchctl [--socket PATH] status [--json]   daemon, workers, streams, segments
//   batchctl [--socket PATH] stats [--json | --summary] [--watch N [--count C]]
//       per-stream rates and per-worker busy%, or (--summary) the daemon in one line of at most 80 columns
//       (batchctl_summary.h); --watch N: again every N seconds, rates over the interval, C times in all
//   batchctl [--socket PATH] shm [--json] [--gc [--include-foreign]]
//       every live segment (stream, owner pid/uid, strategy, size, slots, age), the fds each client holds, and a
//       scan of /dev/shm for orphans (batchd.<instance>.* whose instance is provably gone), legacy batchd.<pid>.*
//       names and foreign leftovers (torch_*, ...). Works when the daemon is down, from /dev/shm alone. --gc never
//       removes a file in use, nor, unless run as root, another user's (batchd/wire/shm_scan.h). Exits 1 when a
//       daemon took the connection but its live segments could not be had (the report says they are missing).
//   batchctl [--socket PATH] health [--live]   the probes' question: answers and takes new streams (batchctl_health.h)
//   batchctl [--socket PATH] cache [DATASET] [--drop] [--json]   the sample cache; --drop empties it (batchctl_cache.h)
//
// --timeout S: the deadline of each request (ConnectOptions::request_timeout; default $BATCHD_TIMEOUT, else 30 s).
// Exit status: 0 on success, 1 if the daemon cannot be reached, does not answer in time or answers with an error
// (health: or is not ready),
// 2 on a usage error.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "batchctl_cache.h"
#include "batchctl_health.h"
#include "batchctl_shm.h"
#include "batchctl_summary.h"
#include "batchctl_views.h"
#include "batchd/admin.h"

namespace {

// The socket asked and who serves it (SO_PEERCRED).
struct Served {
  std::string socket;
  batchd::DaemonCredentials daemon;
};

// The daemon's status, or nullopt after printing the reason to stderr; *served: the socket and who serves it.
std::optional<batchd::DaemonStatus> query_status(const batchd::ConnectOptions& connect, Served* served = nullptr) {
  auto admin = batchd::Admin::connect(connect);
  auto status = admin.ok() ? admin->status() : batchd::Result<batchd::DaemonStatus>(admin.error());
  if (!status.ok()) {
    std::fprintf(stderr, "batchctl: %s\n", status.error().message().c_str());
    return std::nullopt;
  }
  if (served != nullptr) *served = {admin->socket_path(), admin->daemon_credentials()};
  return std::move(status).value();
}

// drain / shutdown: prints the daemon's acknowledgement.
int send_ack_request(const batchd::ConnectOptions& socket, bool shutdown) {
  auto admin = batchd::Admin::connect(socket);
  auto ack = !admin.ok() ? batchd::Result<std::string>(admin.error()) : shutdown ? admin->shutdown() : admin->drain();
  if (!ack.ok()) {
    std::fprintf(stderr, "batchctl: %s\n", ack.error().message().c_str());
    return 1;
  }
  std::printf("%s\n", ack->c_str());
  return 0;
}

// stats: the table, or with `summary` one line under a header; with watch > 0 again every `watch` seconds, `count`
// outputs in all (0 = until interrupted). Exit status as main's.
int run_stats(const batchd::ConnectOptions& socket, batchd::DaemonStatus status, double watch, bool summary,
              uint64_t count) {
  if (summary) {
    std::printf("%s\n%s\n", batchd::ctl::summary_header().c_str(), batchd::ctl::summary_line(status, nullptr).c_str());
  } else {
    batchd::ctl::print_stats(status, std::nullopt, 0);
  }
  std::fflush(stdout);
  for (uint64_t printed = 1; watch > 0 && (count == 0 || printed < count); ++printed) {
    std::this_thread::sleep_for(std::chrono::duration<double>(watch));
    auto next = query_status(socket);
    if (!next) return 1;
    if (summary) {
      if (printed % batchd::ctl::kSummaryHeaderEvery == 0) std::printf("%s\n", batchd::ctl::summary_header().c_str());
      std::printf("%s\n", batchd::ctl::summary_line(*next, &status).c_str());
    } else {
      std::printf("\n--- %s\n", std::to_string(next->uptime_seconds).c_str());
      batchd::ctl::print_stats(*next, status, watch);
    }
    std::fflush(stdout);
    status = std::move(*next);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(R"(batchctl — administer a running batchd.

COMMANDS
  status      daemon, datasets, workers, streams (one screen)
  stats       per-stream samples/s, MB/s, ahead% and stall%; per-worker busy% (--watch N to refresh);
              --summary: one line of at most 80 columns (see batchctl stats --help)
  shm         /dev/shm usage and leaks; works with the daemon down (--gc removes orphans)
  cache       the sample cache (pipelines' cache points): bytes used of cache.max_bytes, hits, fills; per dataset
              and op prefix (admins): entries, bytes, fill progress, hit rate. cache DATASET: that dataset only;
              --drop [DATASET]: drop its entries, or every entry (admins only)
  health      exit 0 if the daemon answers, is not draining and has a worker (--live: if it answers); for
              probes: one small request, whatever the number of streams, for anyone who can connect
  datasets    the datasets the daemon declares: format, state, samples, content fingerprint (--json: in full, and
              what it covers; equal on every node = the same data), unavailable ones with the reason
  streams     open streams: dataset, pipeline, client pid, state, progress, skipped samples
  workers     worker processes: pid, state, batches made, restarts, busy%
  drain       refuse new streams; running streams continue (admins only)
  shutdown    drain and exit (as SIGTERM; running streams get "daemon shutting down"; admins only)

Admins are root, the daemon's user and members of its daemon.admin_group; anyone else sees their own streams in
full and other users' only as a count.

Every command takes --json (one JSON object; field names as in proto/batchd_admin.proto).
The socket is --socket, else $BATCHD_SOCKET, else /run/batchd/batchd.sock; $BATCHD_EXPECT_OWNER (a uid or
user name) refuses a daemon of another user. Each request waits at most --timeout seconds, else $BATCHD_TIMEOUT,
else 30 (0 = no deadline).
EXIT STATUS: 0 success, 1 daemon unreachable, silent past the timeout, or it refused (health: or not ready; shm: its
segments missing), 2 usage error.)",
               "batchctl");
  app.require_subcommand(1);
  std::string socket;
  bool json = false;
  double watch = 0;
  app.add_option("-s,--socket", socket, "the daemon's socket");
  std::optional<double> timeout;
  app.add_option("--timeout", timeout, "seconds each request may take (default $BATCHD_TIMEOUT, else 30; 0 = no "
                                       "deadline)")
      ->check(CLI::NonNegativeNumber);
  app.set_version_flag("--version", std::string("batchctl ") + BATCHD_VERSION);
  auto* status_cmd = app.add_subcommand("status", "daemon, datasets, workers and streams");
  auto* stats_cmd = app.add_subcommand("stats", "per-stream throughput, ahead% / stall%, per-worker busy%");
  bool summary = false;
  uint64_t count = 0;
  auto* watch_opt = stats_cmd->add_option("--watch", watch, "refresh every N seconds, rates over the last interval")
                        ->check(CLI::PositiveNumber);
  auto* summary_opt = stats_cmd->add_flag(
      "--summary", summary,
      "one line of at most 80 columns; with --watch, one per interval\n"
      "(vmstat-style: the header again every 20 lines; the first line's rates are\n"
      "over lifetimes, later ones over the interval). The fields:\n"
      "  STRMS      open streams (yours, or all for an admin, + other users' count)\n"
      "  SAMPLES/S  samples delivered per second (the streams you see)\n"
      "  BYTES/S    tensor bytes delivered per second (the same streams)\n"
      "  BUSY%      workers' busy time / alive time, all workers together\n"
      "  STALL%     time clients waited for data / streams' open time\n"
      "  AHEAD%     time every slot held a finished batch / streams' open time\n"
      "  SHM/BUDGET bytes of all the daemon's segments / limits.max_shm_bytes\n"
      "  FAIL       your streams in state failed; SKIP: samples skipped (on_error = skip)\n"
      "  RESTART    worker processes replaced since the daemon started\n"
      "Numbers above 999 carry SI suffixes k M G T P E (powers of 1000).");
  stats_cmd->add_option("--count", count, "with --watch: stop after C outputs (0 = until interrupted)")
      ->needs(watch_opt);
  auto* datasets_cmd = app.add_subcommand("datasets", "declared datasets");
  auto* streams_cmd = app.add_subcommand("streams", "open streams");
  auto* workers_cmd = app.add_subcommand("workers", "worker processes");
  auto* drain_cmd = app.add_subcommand("drain", "refuse new streams; running streams continue");
  auto* shutdown_cmd = app.add_subcommand("shutdown", "drain and exit, as SIGTERM");
  bool live = false;
  auto* health_cmd = app.add_subcommand("health", "exit 0 if the daemon answers and takes new streams (the probes)");
  health_cmd->add_flag("--live", live, "exit 0 if it answers at all, draining or not (the liveness probe)");
  batchd::ShmReportOptions shm_options;
  auto* shm_cmd = app.add_subcommand(
      "shm", "/dev/shm usage and leaks: the daemon's live segments (stream, owner pid/uid, strategy, size, slot "
             "states, age), the fds each client holds, orphans (segments of batchd instances that are provably "
             "gone), legacy batchd.<pid>.* names and foreign files (torch_* leftovers, ...). Works when the daemon "
             "is down.");
  auto* gc = shm_cmd->add_flag("--gc", shm_options.gc,
                               "remove the orphans and legacy names that no process has open or mapped (as a user "
                               "other than root: only your own files); each file kept is listed with the reason");
  shm_cmd->add_option("--shm-dir", shm_options.shm_dir, "where POSIX shared memory lives")->capture_default_str();
  shm_cmd->add_flag("--include-foreign", shm_options.include_foreign,
                    "with --gc: also remove PyTorch leftovers (torch_*) that no process has open or mapped")
      ->needs(gc);
  std::string cache_dataset;
  bool cache_drop = false;
  auto* cache_cmd = app.add_subcommand("cache", "the sample cache: use, hits, and per dataset and ops its entries");
  cache_cmd->add_option("dataset", cache_dataset, "show (or with --drop, drop) this dataset's entries only");
  cache_cmd->add_flag("--drop", cache_drop, "drop the entries of DATASET, or every entry (admins only): their memory "
                                            "goes back to the host; the samples are computed again when next read");
  for (auto* cmd : {status_cmd, stats_cmd, datasets_cmd, streams_cmd, workers_cmd, shm_cmd, cache_cmd}) {
    cmd->add_flag("--json", json, "print one JSON object");
  }
  summary_opt->excludes(stats_cmd->get_option("--json"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  batchd::ConnectOptions connect;
  connect.socket_path = socket;
  if (timeout) connect.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(*timeout * 1000)));
  if (*drain_cmd || *shutdown_cmd) return send_ack_request(connect, shutdown_cmd->parsed());
  if (*health_cmd) return batchd::ctl::run_health(connect, live);
  if (*cache_cmd) {
    return cache_drop ? batchd::ctl::run_cache_drop(connect, cache_dataset)
                      : batchd::ctl::run_cache(connect, cache_dataset, json);
  }
  if (*shm_cmd) {
    shm_options.socket_path = socket;
    shm_options.request_timeout = connect.request_timeout;
    const auto report = batchd::shm_report(shm_options);
    if (!json) batchd::ctl::print_shm_report(report);
    if (!json && report.daemon_reachable) {  // the cache: shared memory of the daemon's, not a file in /dev/shm
      auto admin = batchd::Admin::connect(connect);
      auto st = admin.ok() ? admin->status_page(0) : batchd::Result<batchd::DaemonStatus>(admin.error());
      if (st.ok()) batchd::ctl::print_cache_memory(st->cache);
    }
    const int printed = json ? batchd::ctl::print_json(batchd::to_json(report)) : 0;
    return report.segments_missing ? 1 : printed;
  }

  Served served;
  auto status = query_status(connect, &served);
  if (!status) return 1;
  if (json) {
    batchd::DaemonStatus view = *status;
    if (*datasets_cmd || *streams_cmd || *workers_cmd) {
      view = {};  // only the part asked for; every other field at its default, as before
      if (*datasets_cmd) {
        view.datasets = status->datasets;
        view.dataset_entries = status->dataset_entries;
        view.remote_cache = status->remote_cache;
      }
      if (*streams_cmd) view.streams = status->streams;
      if (*workers_cmd) view.workers = status->workers;
    }
    return batchd::ctl::print_json(batchd::to_json(view));
  }
  if (*datasets_cmd) batchd::ctl::print_datasets(*status);
  if (*streams_cmd) batchd::ctl::print_streams(*status);
  if (*workers_cmd) batchd::ctl::print_workers(*status);
  if (*status_cmd) {
    const auto& d = served.daemon;
    std::printf("socket %s: daemon pid %d, uid %u%s\n", served.socket.c_str(), d.pid, static_cast<unsigned>(d.uid),
                d.user.empty() ? "" : (" (" + d.user + ")").c_str());
    batchd::ctl::print_status(*status);
  }
  if (*stats_cmd) return run_stats(connect, std::move(*status), watch, summary, count);
  return 0;
}
