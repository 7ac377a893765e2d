#include "config/command_line.h"

#include <cstdio>

namespace batchd::daemon {

void add_options(CLI::App& app, CommandLine* line) {
  app.add_option("-c,--config", line->config_path, "TOML configuration file (default: the embedded configuration)")
      ->check(CLI::ExistingFile);
  app.add_option("-s,--socket", line->socket, "Unix socket to serve (default: daemon.socket, /run/batchd/batchd.sock)");
  app.add_option("-w,--workers", line->workers, "worker processes to fork (default: daemon.workers; 0 = one per core)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--min-chunk-us", line->min_chunk_us,
                 "no chunk of a batch shorter than this much work, in µs of the stream's measured time per sample "
                 "(default: daemon.min_chunk_us, 50; 0 = split every batch into ceil(workers / depth) chunks)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--task-timeout-min-s", line->task_timeout_min_s,
                 "watchdog: the least time a worker gets for any task before it is killed and the task redone, in s "
                 "(default: daemon.task_timeout_min_s)")
      ->check(CLI::Range(1, 86400));
  app.add_option("--per-sample-timeout-ms", line->per_sample_timeout_ms,
                 "watchdog: a task of n samples may take n times this, in ms, if that is more than the minimum "
                 "(default: daemon.per_sample_timeout_ms)")
      ->check(CLI::Range(1, 3600000));
  app.add_option("--shm-strategy", line->strategy,
                 "default sharing strategy: file_descriptor (memfd passed over the socket; nothing can leak) or "
                 "file_system (named /dev/shm/batchd.<instance>.<stream>, readable only by the stream's uid)")
      ->check(CLI::IsMember({"file_descriptor", "file_system"}));
  app.add_option("--cache-dir", line->cache_dir,
                 "directory for dataset indexes kept between runs (webdataset shard indexes), an absolute path; "
                 "\"\" = none (default: daemon.cache_dir, /var/cache/batchd)");
  app.add_option("--log-level", line->log_level, "trace, debug, info, warn, error, critical or off (default: info)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_option("--exit-with-parent", line->exit_with_parent,
                 "PID of the process that starts batchd, which must be its parent: drain and exit (as on SIGTERM) "
                 "when it exits, however it exits. For a daemon private to one process (batchd.Loader's)")
      ->check(CLI::Range(2, 1 << 30));
  app.add_flag("--print-default-config", line->print_default, "print the embedded default configuration and exit");
  app.add_flag("--check-config", line->check_config,
               "parse and validate the configuration (--config, else the embedded one) with the options given, print "
               "what it declares and exit: 0 if it is valid, 1 with the error (naming the file, line and key). Does "
               "not open the datasets, the socket or /dev/shm, nor look up socket_group / admin_group");
  app.add_option("--fault-crash-on-sample", line->faults.crash_on_sample,
                 "fault injection for tests: every worker crashes (SIGSEGV) when it reaches this sample index")
      ->group("Fault injection (tests only)");
  app.add_option("--fault-hang-on-sample", line->faults.hang_on_sample,
                 "fault injection for tests: every worker hangs (until the watchdog kills it) when it reaches this "
                 "sample index")
      ->group("Fault injection (tests only)");
  app.add_option("--fault-crash-in-cache-fill", line->faults.crash_in_cache_fill,
                 "fault injection for tests: the first worker that fills the cache entry of this sample index writes "
                 "half of it and SIGKILLs itself (once per daemon: the redo fills it)")
      ->group("Fault injection (tests only)");
}

Status apply_options(const CLI::App& app, const CommandLine& line, Config* config) {
  if (!line.socket.empty()) config->socket = line.socket;
  if (app.count("--workers")) config->workers = line.workers;
  if (app.count("--min-chunk-us")) config->min_chunk_us = line.min_chunk_us;
  if (app.count("--task-timeout-min-s")) config->task_timeout_min_s = line.task_timeout_min_s;
  if (app.count("--per-sample-timeout-ms")) config->per_sample_timeout_ms = line.per_sample_timeout_ms;
  if (!line.strategy.empty()) config->shm_strategy = *parse_strategy(line.strategy);
  if (app.count("--cache-dir")) {
    if (!line.cache_dir.empty() && line.cache_dir.front() != '/') {
      return Error(ErrorCode::kInvalidArgument,
                   "--cache-dir " + line.cache_dir + " must be an absolute path (or \"\" for none)");
    }
    config->cache_dir = line.cache_dir;
  }
  if (!line.log_level.empty()) config->log_level = line.log_level;
  return ok_status();
}

std::string describe_config(const CommandLine& line, const Config& config) {
  std::string names;
  for (const auto& d : config.datasets) names += (names.empty() ? "" : ", ") + d.name + " (" + d.format + ")";
  char text[1024];
  std::snprintf(text, sizeof text,
                "%s: valid. socket %s, workers %u (0 = one per core), shm_strategy %s, limits.max_shm_bytes %llu "
                "(0 = half of physical memory), cache_dir \"%s\"; datasets: ",
                line.config_path.empty() ? "<embedded default config>" : line.config_path.c_str(),
                config.socket.c_str(), config.workers, strategy_name(config.shm_strategy),
                static_cast<unsigned long long>(config.limits.max_shm_bytes), config.cache_dir.c_str());
  return text + (names.empty() ? std::string("none") : names);
}

}  // namespace batchd::daemon
