// config.h — the daemon's configuration: TOML (toml++), validated completely at start-up.
//
// Unknown keys, wrong types and out-of-range values are refused with the source (file name), line and key named,
// so a typo never silently falls back to a default. Without --config the embedded default_config.toml applies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "cache/cache_settings.h"
#include "data/dataset_config.h"
#include "remote/remote_settings.h"
#include "server/server_settings.h"

namespace batchd::daemon {

// daemon.cache_dir's default: where dataset indexes (webdataset shard indexes) are kept between runs.
inline constexpr const char* kDefaultCacheDir = "/var/cache/batchd";

// The whole configuration: the stream and server layers' settings (streams/stream_settings.h,
// server/server_settings.h) and what only start-up reads.
struct Config : ServerSettings {
  uint32_t workers = 0;  // 0 = one per CPU core
  std::string cache_dir = kDefaultCacheDir;  // dataset index cache; "" = no cache (index at every start)
  std::string log_level = "info";
  CacheSettings cache;  // [cache]: cache/cache_settings.h
  std::string metrics_listen;  // "host:port" of the Prometheus endpoint; "" = off
  bool metrics_per_stream = false;  // per-stream series (stream, dataset, pipeline labels) on the endpoint
  std::vector<DatasetConfig> datasets;
};

// The embedded default configuration text (daemon/config/default_config.toml).
std::string_view default_config_text();

// Parses and validates TOML text; `source` names it in errors (a file path or "<embedded default>").
Result<Config> parse_config(std::string_view text, const std::string& source);

// Reads and parses a file.
Result<Config> load_config_file(const std::string& path);

}  // namespace batchd::daemon
