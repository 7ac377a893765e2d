// batchd — the data-loading daemon. See `batchd --help` and docs/ for the whole story.
//
// Start-up order matters: configuration, the socket's instance lock, this run's segment instance (its id and lock
// in /dev/shm) before the clean-up of gone instances' segments, datasets (loaded once, shared copy-on-write), then
// the worker processes are forked — before any thread exists — then the control socket is served on this single
// thread.
#include <signal.h>
#include <unistd.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

#include "config.h"
#include "data/dataset.h"
#include "data/dataset_loader.h"
#include "data/index_cache.h"
#include "server/instance_lock.h"
#include "server/metrics_http.h"
#include "server/server.h"
#include "server/service_notify.h"
#include "streams/orphan_segments.h"
#include "streams/segment_instance.h"
#include "streams/stream_manager.h"
#include "workers/worker_pool.h"

using namespace batchd;
using namespace batchd::daemon;

namespace {

constexpr const char* kDescription = R"(batchd — a data-loading daemon for ML training.

Persistent worker processes read, transform and collate samples straight into shared-memory segments, one segment
of `depth` recycled slots per stream; trainers connect over a Unix socket with the batchd client library and read
each batch in place.

Configuration: TOML (--config; every key is documented in deploy/batchd.toml). Without --config the embedded
default applies: the datasets `fashion-mnist` and `fashion-mnist-test` from Debian's dataset-fashion-mnist
package. Command-line options override the file.

Signals: SIGTERM/SIGINT/SIGQUIT drain and exit (running streams get a "daemon shutting down" error; every segment
is released and the socket removed). Each run has a fresh instance id (in `batchctl status`); its file_system
segments are /dev/shm/batchd.<instance>.<stream> and it holds /dev/shm/batchd.<instance>.lock while it runs. At
start-up, the segments of instances that are provably gone (their lock is free) are removed, unless a process
still has them open or mapped. Exit status: 0 after a clean shutdown, 1 on a start-up error (the message says
which file, key or resource and what to do).)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(kDescription, "batchd");
  std::string config_path, socket, strategy, log_level, cache_dir;
  uint32_t workers = 0, min_chunk_us = 0, task_timeout_min_s = 0, per_sample_timeout_ms = 0;
  bool print_default = false, check_config = false;
  FaultInjection faults;
  app.add_option("-c,--config", config_path, "TOML configuration file (default: the embedded configuration)")
      ->check(CLI::ExistingFile);
  app.add_option("-s,--socket", socket, "Unix socket to serve (default: daemon.socket, /run/batchd/batchd.sock)");
  app.add_option("-w,--workers", workers, "worker processes to fork (default: daemon.workers; 0 = one per core)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--min-chunk-us", min_chunk_us,
                 "no chunk of a batch shorter than this much work, in µs of the stream's measured time per sample "
                 "(default: daemon.min_chunk_us, 50; 0 = split every batch into ceil(workers / depth) chunks)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--task-timeout-min-s", task_timeout_min_s,
                 "watchdog: the least time a worker gets for any task before it is killed and the task redone, in s "
                 "(default: daemon.task_timeout_min_s)")
      ->check(CLI::Range(1, 86400));
  app.add_option("--per-sample-timeout-ms", per_sample_timeout_ms,
                 "watchdog: a task of n samples may take n times this, in ms, if that is more than the minimum "
                 "(default: daemon.per_sample_timeout_ms)")
      ->check(CLI::Range(1, 3600000));
  app.add_option("--shm-strategy", strategy,
                 "default sharing strategy: file_descriptor (memfd passed over the socket; nothing can leak) or "
                 "file_system (named /dev/shm/batchd.<instance>.<stream>, readable only by the stream's uid)")
      ->check(CLI::IsMember({"file_descriptor", "file_system"}));
  app.add_option("--cache-dir", cache_dir,
                 "directory for dataset indexes kept between runs (webdataset shard indexes), an absolute path; "
                 "\"\" = none (default: daemon.cache_dir, /var/cache/batchd)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical or off (default: info)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_flag("--print-default-config", print_default, "print the embedded default configuration and exit");
  app.add_flag("--check-config", check_config,
               "parse and validate the configuration (--config, else the embedded one) with the options given, print "
               "what it declares and exit: 0 if it is valid, 1 with the error (naming the file, line and key). Does "
               "not open the datasets, the socket or /dev/shm, nor look up socket_group / admin_group");
  app.add_option("--fault-crash-on-sample", faults.crash_on_sample,
                 "fault injection for tests: every worker crashes (SIGSEGV) when it reaches this sample index")
      ->group("Fault injection (tests only)");
  app.add_option("--fault-hang-on-sample", faults.hang_on_sample,
                 "fault injection for tests: every worker hangs (until the watchdog kills it) when it reaches this "
                 "sample index")
      ->group("Fault injection (tests only)");
  app.set_version_flag("--version", std::string("batchd ") + BATCHD_VERSION);
  CLI11_PARSE(app, argc, argv);

  if (print_default) {
    std::fwrite(default_config_text().data(), 1, default_config_text().size(), stdout);
    return 0;
  }
  setup_logging();
  auto config = config_path.empty() ? parse_config(default_config_text(), "<embedded default config>")
                                    : load_config_file(config_path);
  if (!config.ok()) {
    spdlog::critical("{}", config.error().message());
    return 1;
  }
  if (!socket.empty()) config->socket = socket;
  if (app.count("--workers")) config->workers = workers;
  if (app.count("--min-chunk-us")) config->min_chunk_us = min_chunk_us;
  if (app.count("--task-timeout-min-s")) config->task_timeout_min_s = task_timeout_min_s;
  if (app.count("--per-sample-timeout-ms")) config->per_sample_timeout_ms = per_sample_timeout_ms;
  if (!strategy.empty()) config->shm_strategy = *parse_strategy(strategy);
  if (app.count("--cache-dir")) {
    if (!cache_dir.empty() && cache_dir.front() != '/') {
      spdlog::critical("--cache-dir {} must be an absolute path (or \"\" for none)", cache_dir);
      return 1;
    }
    config->cache_dir = cache_dir;
  }
  if (!log_level.empty()) config->log_level = log_level;
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  if (check_config) {
    std::string names;
    for (const auto& d : config->datasets) names += (names.empty() ? "" : ", ") + d.name + " (" + d.format + ")";
    std::printf("%s: valid. socket %s, workers %u (0 = one per core), shm_strategy %s, limits.max_shm_bytes %llu "
                "(0 = half of physical memory), cache_dir \"%s\"; datasets: %s\n",
                config_path.empty() ? "<embedded default config>" : config_path.c_str(), config->socket.c_str(),
                config->workers, strategy_name(config->shm_strategy),
                static_cast<unsigned long long>(config->limits.max_shm_bytes), config->cache_dir.c_str(),
                names.empty() ? "none" : names.c_str());
    return 0;
  }
  if (config->workers == 0) config->workers = std::max(1u, std::thread::hardware_concurrency());
  ::signal(SIGPIPE, SIG_IGN);
  // Whatever the daemon creates is its own unless it says otherwise (each segment, lock and socket sets its mode).
  ::umask(077);
  // Each stream holds an fd (its segment) and each client a socket: use the whole hard limit on open files.
  if (rlimit nofile{}; ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
  auto lock = InstanceLock::acquire(config->socket);  // before anything else touches the socket or /dev/shm
  if (!lock.ok()) {
    spdlog::critical("{}", lock.error().message());
    return 1;
  }
  // This run's identity in /dev/shm, claimed (its lock held) before the clean-up, so that nothing of a live
  // instance, this one included, can look like an orphan.
  auto instance = SegmentInstance::claim("/dev/shm", config->socket);
  if (!instance.ok()) {
    spdlog::critical("{}", instance.error().message());
    return 1;
  }
  spdlog::info("instance {}", instance->id());
  remove_orphan_segments();

  prepare_index_cache_dir(config->cache_dir);
  DatasetRegistry datasets;
  auto initial = datasets.reload(config->datasets, {}, config->cache_dir);
  for (const auto& [name, d] : datasets.describe()) {
    if (d.state == DatasetRegistry::State::kAvailable) {
      spdlog::info("dataset {}: {} samples", name, (*datasets.find(name))->size());
    } else if (d.state == DatasetRegistry::State::kUnavailable) {
      spdlog::warn("dataset {} is unavailable: {}", name, d.detail);
    }
  }

  boost::asio::io_context io(1);
  WorkerPool::Options pool_options;
  pool_options.count = config->workers;
  pool_options.max_frame_bytes = config->limits.max_frame_bytes;
  pool_options.timeouts = TaskTimeouts{std::chrono::seconds(config->task_timeout_min_s),
                                       std::chrono::milliseconds(config->per_sample_timeout_ms)};
  pool_options.faults = faults;
  auto pool = WorkerPool::start(io, pool_options, datasets);
  if (!pool.ok()) {
    spdlog::critical("cannot start workers: {}", pool.error().message());
    return 1;
  }
  // Background opens (webdataset indexes): once one is installed, the workers fork again to hold it.
  DatasetLoader loader(io, datasets, config->cache_dir, [&](const std::string&) { (*pool)->restart_all(); });
  loader.fingerprint(datasets.take_fingerprint_jobs());
  loader.load(std::move(initial.jobs));
  StreamManager streams(*config, datasets, **pool, std::move(instance).value());
  (*pool)->serve(streams);  // worker events go to the stream manager from here on
  auto server = Server::create(io, *config, streams, datasets);
  if (!server.ok()) {
    spdlog::critical("{}", server.error().message());
    return 1;
  }
  (*server)->set_shutdown_handler([] { ::kill(::getpid(), SIGTERM); });  // batchctl shutdown = systemctl stop
  (*server)->start();
  spdlog::info("batchd {} serving {} with {} workers, default strategy {}", BATCHD_VERSION, config->socket,
               config->workers, strategy_name(config->shm_strategy));
  std::unique_ptr<MetricsServer> metrics;
  if (!config->metrics_listen.empty()) {
    auto m = MetricsServer::create(io, config->metrics_listen, [&] {
      // A TCP reader has no credentials: streams only as counts, unless per-stream series are configured.
      wire::StatusReply status;
      (*server)->fill_status(&status, config->metrics_per_stream ? StatusView::everything() : StatusView::none());
      return status;
    });
    if (!m.ok()) {
      spdlog::critical("{}", m.error().message());
      return 1;
    }
    metrics = std::move(m).value();
  }
  ServiceNotifier notifier(io);
  notifier.ready("serving " + config->socket + " with " + std::to_string(config->workers) + " workers");
  notifier.start_watchdog();

  // SIGHUP: reload [datasets] and [pipelines] from the config file; running streams keep the data and the spec they
  // opened with; a config that does not parse (a bad pipeline included) changes nothing.
  boost::asio::signal_set hangup(io, SIGHUP);
  std::function<void()> arm_hangup = [&] {
    hangup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      arm_hangup();
      if (config_path.empty()) {
        spdlog::info("SIGHUP: no --config file to reload (the embedded configuration is fixed)");
        return;
      }
      notifier.reloading();
      auto fresh = load_config_file(config_path);
      if (!fresh.ok()) {
        spdlog::error("SIGHUP: keeping the current datasets and pipelines: {}", fresh.error().message());
        notifier.status("reload failed: " + fresh.error().message());
        notifier.ready("serving " + config->socket + " (reload failed, see the log)");
        return;
      }
      auto summary = datasets.reload(fresh->datasets, streams.dataset_keys_in_use(), config->cache_dir);
      config->pipelines = std::move(fresh->pipelines);  // plan() reads them at each OpenStream
      auto names = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
        return s.empty() ? std::string("none") : s;
      };
      spdlog::info("SIGHUP: reloaded from {}: datasets added {}, changed {}, removed {}, unavailable {}; {} "
                   "pipelines; only [datasets] and [pipelines] are reloaded (other changes need a restart)",
                   config_path, names(summary.added), names(summary.changed), names(summary.removed),
                   names(summary.unavailable), config->pipelines.size());
      for (const auto& [name, why] : summary.changed_on_disk) {
        spdlog::info("SIGHUP: dataset {} is opened again: {}", name, why);
      }
      for (const auto& name : summary.unavailable) {
        if (auto d = datasets.find(name); !d.ok()) spdlog::warn("dataset {}: {}", name, d.error().message());
      }
      loader.fingerprint(datasets.take_fingerprint_jobs());  // every available dataset's, computed again
      loader.load(std::move(summary.jobs));
      // Workers fork again from the daemon, which now holds the new datasets; the old ones are retired without
      // waiting for them (a stopped worker is killed after its exit grace).
      (*pool)->restart_all();
      notifier.ready("serving " + config->socket + " with " + std::to_string(config->workers) + " workers");
    });
  };
  arm_hangup();

  boost::asio::signal_set signals(io, SIGTERM, SIGINT, SIGQUIT);
  boost::asio::steady_timer deadline(io);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("{} received: draining", ::strsignal(sig));
    notifier.stopping(std::string("draining (") + ::strsignal(sig) + ")");
    hangup.cancel();  // nothing may keep the event loop alive once the connections are drained
    loader.cancel();  // an index under way gives up; nothing is installed from here on (joined after the loop)
    if (metrics) metrics->stop();
    (*server)->stop(std::string("daemon shutting down (") + ::strsignal(sig) + "); reconnect when it is back",
                    [&] { deadline.cancel(); });
    (*pool)->stop();  // returns at once: the workers are reaped while the connections drain, or after the loop
    deadline.expires_after(std::chrono::seconds(2));  // clients that never read their last frames
    deadline.async_wait([&](const boost::system::error_code& e) {
      if (!e) io.stop();
    });
  });
  for (;;) {
    try {
      io.run();
      break;
    } catch (const std::exception& e) {  // a handler that threw: log it and keep serving
      spdlog::error("unexpected exception in the event loop: {}", e.what());
    }
  }
  // Drained. A second SIGTERM (systemd's, a supervisor's) from here on must not turn the clean exit into "killed by
  // signal": asio's handlers go when the signal_sets above are destroyed, so block these signals for the rest of
  // the exit.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGTERM, SIGINT, SIGQUIT, SIGHUP}) sigaddset(&stop_signals, sig);
  ::sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  loader.stop();    // the loader thread ends (it was cancelled when the drain began)
  (*pool)->stop();  // idempotent; no worker event may reach `streams` after this point
  (*pool)->wait_stopped(pool_options.exit_grace + std::chrono::seconds(1));  // bounded: SIGKILL after the grace
  streams.shutdown("daemon shutting down");
  spdlog::info("batchd stopped");
  return 0;
}
