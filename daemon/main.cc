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
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <thread>

#include "config/command_line.h"
#include "config/config.h"
#include "config/config_reload.h"
#include "cache/cache_cleaner.h"
#include "config/cache_config.h"
#include "data/dataset.h"
#include "data/dataset_loader.h"
#include "data/index_cache.h"
#include "server/instance_lock.h"
#include "server/metrics_http.h"
#include "server/parent_watch.h"
#include "server/server.h"
#include "server/service_notify.h"
#include "streams/orphan_segments.h"
#include "streams/segment_instance.h"
#include "remote/shard_store.h"
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

Signals: SIGTERM/SIGINT/SIGQUIT drain and exit, also when they come during start-up (running streams get a "daemon shutting down" error; every segment
is released and the socket removed); so does the exit of the parent given by --exit-with-parent. Each run has a
fresh instance id (in `batchctl status`); its file_system segments are /dev/shm/batchd.<instance>.<stream> and it
holds /dev/shm/batchd.<instance>.lock while it runs. At start-up, the segments of instances that are provably gone
(their lock is free) are removed, unless a process still has them open or mapped. Exit status: 0 after a clean
shutdown, 1 on a start-up error (the message says which file, key or resource and what to do).)";

// The signals that stop the daemon (SIGHUP too: it reloads once ConfigReload handles it, and ends it before).
sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGQUIT, SIGHUP}) sigaddset(&set, sig);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app(kDescription, "batchd");
  CommandLine line;
  add_options(app, &line);
  app.set_version_flag("--version", std::string("batchd ") + BATCHD_VERSION);
  CLI11_PARSE(app, argc, argv);

  if (line.print_default) {
    std::fwrite(default_config_text().data(), 1, default_config_text().size(), stdout);
    return 0;
  }
  setup_logging();
  auto config = line.config_path.empty() ? parse_config(default_config_text(), "<embedded default config>")
                                         : load_config_file(line.config_path);
  if (!config.ok()) {
    spdlog::critical("{}", config.error().message());
    return 1;
  }
  if (auto applied = apply_options(app, line, &*config); !applied.ok()) {
    spdlog::critical("{}", applied.error().message());
    return 1;
  }
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  if (line.check_config) {
    std::printf("%s\n", describe_config(line, *config).c_str());
    return 0;
  }
  // --exit-with-parent: checked before anything is created (a parent already gone: exit now), watched from the loop.
  std::optional<ParentWatch> parent;
  if (line.exit_with_parent != 0) {
    auto watch = ParentWatch::open(line.exit_with_parent);
    if (!watch.ok()) {
      spdlog::critical("{}", watch.error().message());
      return 1;
    }
    parent.emplace(std::move(watch).value());
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
  // From the first lock file until the signal handlers below exist, a stop signal's default action would end the
  // daemon without removing its lock files (/dev/shm/batchd.<instance>.lock): the stop signals wait, blocked, and
  // are handled as a clean drain once the handlers are installed. Forked workers unblock them (become_worker).
  const sigset_t stop_signals = stop_signal_set();
  ::sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
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
  // Remote shards' cache (daemon.cache_dir/shards): its fetch threads start at the first fetch, after the fork.
  std::shared_ptr<remote::ShardStore> shard_store;
  if (!config->cache_dir.empty() && config->remote.cache_max_bytes != 0 &&
      index_cache_dir_problem(config->cache_dir).empty()) {  // a cache_dir others may write: no remote shards
    auto store = remote::ShardStore::open(remote::remote_store_options(config->remote, config->cache_dir));
    if (store.ok()) {
      shard_store = std::move(store).value();
    } else {
      spdlog::warn("remote shards are off: {}", store.error().message());
    }
  }
  DatasetRegistry datasets;
  auto initial = datasets.reload(config->datasets, {}, config->cache_dir);
  for (const auto& [name, d] : datasets.describe()) {
    if (d.state == DatasetRegistry::State::kAvailable) {
      spdlog::info("dataset {}: {} samples", name, (*datasets.find(name))->size());
    } else if (d.state == DatasetRegistry::State::kUnavailable) {
      spdlog::warn("dataset {} is unavailable: {}", name, d.detail);
    }
  }

  // The sample cache before the workers fork (they inherit its mapping); its bytes come out of the segments' budget.
  auto cache = make_sample_cache(&*config);
  if (!cache.ok()) {
    spdlog::critical("{}", cache.error().message());
    return 1;
  }

  boost::asio::io_context io(1);
  std::optional<ParentWatch> parent_watch = std::move(parent);  // armed on io below, so destroyed before io
  WorkerPool::Options pool_options;
  pool_options.count = config->workers;
  pool_options.max_frame_bytes = config->limits.max_frame_bytes;
  pool_options.timeouts = TaskTimeouts{std::chrono::seconds(config->task_timeout_min_s),
                                       std::chrono::milliseconds(config->per_sample_timeout_ms)};
  pool_options.faults = line.faults;
  if (auto shared = share_fault_flags(&pool_options.faults); !shared.ok()) {
    spdlog::critical("{}", shared.error().message());
    return 1;
  }
  pool_options.cache = cache->get();
  auto pool = WorkerPool::start(io, pool_options, datasets);
  if (!pool.ok()) {
    spdlog::critical("cannot start workers: {}", pool.error().message());
    return 1;
  }
  // Background opens (webdataset indexes): once one is installed, the workers fork again to hold it.
  DatasetLoader loader(io, datasets, config->cache_dir, [&](const std::string&) { (*pool)->restart_all(); });
  loader.set_shard_store(shard_store);
  loader.fingerprint(datasets.take_fingerprint_jobs());
  loader.load(std::move(initial.jobs));
  StreamManager streams(*config, datasets, **pool, std::move(instance).value(), &io, cache->get());
  CacheCleaner cache_cleaner(io, cache->get());
  (*pool)->serve(streams);  // worker events go to the stream manager from here on
  if (shard_store) {  // a shard fetched: tasks waiting for it may go
    shard_store->set_on_change([&io, &streams] { boost::asio::post(io, [&streams] { streams.pump(); }); });
  }
  auto server = Server::create(io, *config, streams, datasets);
  if (!server.ok()) {
    spdlog::critical("{}", server.error().message());
    return 1;
  }
  (*server)->set_shutdown_handler([] { ::kill(::getpid(), SIGTERM); });
  (*server)->set_shard_store(shard_store);  // batchctl shutdown = systemctl stop
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
  if (parent_watch) {
    parent_watch->watch(io, [pid = parent_watch->pid()] {
      spdlog::info("parent process {} exited (--exit-with-parent)", pid);
      ::kill(::getpid(), SIGTERM);
    });
  }
  ServiceNotifier notifier(io);
  notifier.ready("serving " + config->socket + " with " + std::to_string(config->workers) + " workers");
  notifier.start_watchdog();

  ConfigReload reload(io, line.config_path, {*config, datasets, streams, loader, **pool, notifier});  // SIGHUP

  boost::asio::signal_set signals(io, SIGTERM, SIGINT, SIGQUIT);
  boost::asio::steady_timer deadline(io);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("{} received: draining", ::strsignal(sig));
    notifier.stopping(std::string("draining (") + ::strsignal(sig) + ")");
    if (parent_watch) parent_watch->cancel();
    reload.cancel();  // nothing may keep the event loop alive once the connections are drained
    loader.cancel();  // an index under way gives up; nothing is installed from here on (joined after the loop)
    cache_cleaner.cancel();
    streams.cancel_timers();
    if (metrics) metrics->stop();
    (*server)->stop(std::string("daemon shutting down (") + ::strsignal(sig) + "); reconnect when it is back",
                    [&] { deadline.cancel(); });
    (*pool)->stop();  // returns at once: the workers are reaped while the connections drain, or after the loop
    deadline.expires_after(std::chrono::seconds(2));  // clients that never read their last frames
    deadline.async_wait([&](const boost::system::error_code& e) {
      if (!e) io.stop();
    });
  });
  ::sigprocmask(SIG_UNBLOCK, &stop_signals, nullptr);  // a signal that came during start-up is handled now
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
  ::sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  loader.stop();    // the loader thread ends (it was cancelled when the drain began)
  if (shard_store) shard_store->stop();  // transfers under way give up; nothing posts to io from here on
  (*pool)->stop();  // idempotent; no worker event may reach `streams` after this point
  (*pool)->wait_stopped(pool_options.exit_grace + std::chrono::seconds(1));  // bounded: SIGKILL after the grace
  streams.shutdown("daemon shutting down");
  spdlog::info("batchd stopped");
  return 0;
}
