// command_line.h — batchd's command line (CLI11): the options with their help, and how they override the
// configuration file. Every option but --config, --print-default-config and --check-config overrides one config key
// of the same name (deploy/batchd.toml documents them); an option not given leaves the key as the file says.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "transforms/presets/pipeline.h"  // FaultInjection

namespace batchd::daemon {

struct CommandLine {
  std::string config_path, socket, strategy, log_level, cache_dir;
  uint32_t workers = 0, min_chunk_us = 0, task_timeout_min_s = 0, per_sample_timeout_ms = 0;
  int exit_with_parent = 0;  // a pid; 0 = not given (server/parent_watch.h)
  bool print_default = false, check_config = false;
  FaultInjection faults;
};

// Declares the options on `app`, bound to *line (which must outlive the parse).
void add_options(CLI::App& app, CommandLine* line);

// Writes the options given on the command line over *config. kInvalidArgument for a --cache-dir that is not an
// absolute path (or "").
Status apply_options(const CLI::App& app, const CommandLine& line, Config* config);

// --check-config's one line: "<file>: valid. socket ..., workers ...; datasets: a (imagefolder), ...".
std::string describe_config(const CommandLine& line, const Config& config);

}  // namespace batchd::daemon
