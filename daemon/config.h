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
#include "base/task.h"  // the task watchdog's defaults
#include "batchd/result.h"
#include "data/dataset_config.h"
#include "remote/remote_settings.h"

namespace batchd::daemon::ops {
struct OpLimits;  // transforms/ops/op.h
}  // namespace batchd::daemon::ops

namespace batchd::daemon {

// daemon.cache_dir's default: where dataset indexes (webdataset shard indexes) are kept between runs.
inline constexpr const char* kDefaultCacheDir = "/var/cache/batchd";

struct Limits {
  uint32_t max_frame_bytes = 1u << 20;      // bound on one control message
  uint32_t max_batch_size = 65536;          // samples per batch
  uint32_t default_depth = 4;               // slots per stream when the client asks for 0
  uint32_t max_depth = 64;                  // slots per stream
  uint32_t max_streams_per_connection = 64;
  // Streams one uid may hold open, all its connections together (subscriptions to shared streams included). 1024
  // keeps one user's own streams within one status page (about 200 bytes each: 200 KiB of the 512 KiB a page may
  // take with the default max_frame_bytes), far above a host's trainers (a few streams per GPU rank), and well below
  // what max_connections_per_uid x max_streams_per_connection would allow (16384).
  uint32_t max_streams_per_uid = 1024;
  uint64_t max_segment_bytes = 4ull << 30;  // bytes of one stream's segment
  // Worker processes a trainer may attach to one of its own streams (a Python Dataset's workers; AttachWorker):
  // each is a connection (counted in max_connections_per_uid) and a 4 KiB progress page. 64 is above
  // DataLoader's usual num_workers (the cores of a host) and bounds what one stream can make the daemon track.
  uint32_t max_attached_workers = 64;
  uint64_t max_shm_bytes = 0;               // bytes of all segments together; 0 = half of physical memory
  // Clients (issue 14): what one connection, one uid and all clients together may hold.
  uint32_t max_request_bytes = 64u << 10;   // bound on one client request frame (replies: max_frame_bytes)
  uint32_t frame_timeout_ms = 10000;        // a request frame started must be complete within this
  uint32_t max_connections = 1024;          // client connections, all uids together
  uint32_t max_connections_per_uid = 256;   // client connections of one uid
  // Pipeline specs (issue 24; transforms/ops/op.h OpLimits): what one spec may ask for, client's or config's.
  uint32_t max_ops = 64;            // ops in a spec, nested ones included
  uint32_t max_output_side = 4096;  // pixels: any size an op produces (resize, crops, decode's max_side)
  uint32_t max_kernel_size = 101;   // pixels: gaussian_blur's kernel_size
  uint32_t max_padding = 1024;      // pixels per side: random_crop's padding
  uint64_t max_sample_work = 4'000'000'000;  // estimated multiply-adds per sample (transforms/ops/spec_work.h)
};

// daemon.min_chunk_us's default, measured as docs/benchmarks.md ("batches made in chunks") says.
inline constexpr uint32_t kDefaultMinChunkUs = 50;
// The task watchdog's defaults, kDefaultTaskTimeoutMinS and kDefaultPerSampleTimeoutMs: base/task.h (TaskTimeouts).

// [shares]: shared streams (OpenStream.share, streams/share.h).
struct Shares {
  // Extra slots of a shared segment (it has depth + max_lag): how many batches the production may run ahead of its
  // slowest subscriber's window before a subscriber that keeps the others waiting fails with StreamFailed ("fell N
  // batches behind", its leases revoked: share.h).
  uint32_t max_lag = 8;
  uint32_t max_subscribers = 32;  // subscribers of one shared production
  // The least time a subscriber that keeps the others waiting for slots may release no batch before it is failed
  // (3 times its usual time between releases when that is longer, at most a minute): one that still releases
  // batches (catching up after a late join, or slower) is waited for (share.h).
  uint32_t stall_timeout_ms = 2000;
};

// [cache] (issue 27): the host-wide cache of pipelines' cache points (cache/sample_cache.h). Read at start-up only.
struct CacheSettings {
  // Bytes of shared memory the cache may hold (its index included), counted in limits.max_shm_bytes (its bytes in
  // use and the segments share it). -1 (the key absent) = a quarter of limits.max_shm_bytes, none below 1 MiB;
  // 0 = no cache (cache points computed).
  int64_t max_bytes = -1;
  // Bytes one uid's client-sent specs may fill (config pipelines and presets draw on the whole cache).
  // 0 (absent) = a quarter of max_bytes.
  uint64_t max_bytes_per_uid = 0;
};

struct Config {
  std::string socket = "/run/batchd/batchd.sock";
  uint32_t socket_mode = 0660;
  std::string socket_group;  // "" = the daemon's primary group
  std::string admin_group;   // members may drain/shutdown and see every stream; "" = root and the daemon's uid only
  uint32_t workers = 0;  // 0 = one per CPU core
  uint32_t min_chunk_us = kDefaultMinChunkUs;  // no chunk of a batch shorter than this (streams/chunking.h)
  uint32_t task_timeout_min_s = kDefaultTaskTimeoutMinS;      // watchdog: the least time any task gets
  uint32_t per_sample_timeout_ms = kDefaultPerSampleTimeoutMs;  // watchdog: time per sample of a task
  std::string cache_dir = kDefaultCacheDir;  // dataset index cache; "" = no cache (index at every start)
  wire::SharingStrategy shm_strategy = wire::FILE_DESCRIPTOR;
  std::string log_level = "info";
  Limits limits;
  Shares shares;
  CacheSettings cache;
  RemoteSettings remote;
  std::string metrics_listen;  // "host:port" of the Prometheus endpoint; "" = off
  bool metrics_per_stream = false;  // per-stream series (stream, dataset, pipeline labels) on the endpoint
  std::vector<DatasetConfig> datasets;
  // [pipelines.NAME]: op lists by name (pipeline_config.h), planned when the config was read.
  std::map<std::string, wire::PipelineSpec> pipelines;
};

// The embedded default configuration text (daemon/default_config.toml).
std::string_view default_config_text();

// Parses and validates TOML text; `source` names it in errors (a file path or "<embedded default>").
Result<Config> parse_config(std::string_view text, const std::string& source);

// Reads and parses a file.
Result<Config> load_config_file(const std::string& path);

// The pipeline-spec bounds of `limits` (limits.max_ops, max_output_side, max_kernel_size, max_padding).
ops::OpLimits op_limits(const Limits& limits);

// "file_descriptor" / "file_system" <-> enum.
Result<wire::SharingStrategy> parse_strategy(std::string_view name);
const char* strategy_name(wire::SharingStrategy strategy);

}  // namespace batchd::daemon
