// stream_settings.h — the settings the stream layer reads: [limits], [shares] and the [daemon] keys of streams.
//
// The config layer (config/config.h) reads them from TOML and validates them; Config derives from ServerSettings,
// which derives from StreamSettings, so a StreamManager reads the daemon's one Config through this narrower type
// (SIGHUP's new [pipelines] included) and a test can fill just these. Defaults are the documented ones
// (deploy/batchd.toml). [limits] is here, the lowest layer that reads it; the server reads its connection bounds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/task.h"  // the task watchdog's defaults
#include "batchd.pb.h"
#include "batchd/result.h"
#include "remote/remote_settings.h"

namespace batchd::daemon::ops {
struct OpLimits;  // transforms/ops/op.h
}  // namespace batchd::daemon::ops

namespace batchd::daemon {

// [limits]: what one request, stream, connection, uid and spec may ask of the daemon.
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

// What StreamManager reads (streams/stream_manager.h). Defaults: deploy/batchd.toml.
struct StreamSettings {
  uint32_t min_chunk_us = kDefaultMinChunkUs;  // no chunk of a batch shorter than this (streams/chunking.h)
  uint32_t task_timeout_min_s = kDefaultTaskTimeoutMinS;      // watchdog: the least time any task gets
  uint32_t per_sample_timeout_ms = kDefaultPerSampleTimeoutMs;  // watchdog: time per sample of a task
  wire::SharingStrategy shm_strategy = wire::FILE_DESCRIPTOR;  // a stream's when its OpenStream names none
  Limits limits;
  Shares shares;
  RemoteSettings remote;  // remote.prefetch_shards: shards fetched ahead of a remote stream's reads
  // [pipelines.NAME]: op lists by name (config/pipeline_config.h), planned when the config was read; SIGHUP
  // replaces them, and OpenStream reads them each time.
  std::map<std::string, wire::PipelineSpec> pipelines;
};

// The pipeline-spec bounds of `limits` (limits.max_ops, max_output_side, max_kernel_size, max_padding,
// max_sample_work).
ops::OpLimits op_limits(const Limits& limits);

// "file_descriptor" / "file_system" <-> enum (the sharing strategies; daemon.shm_strategy, OpenStream.strategy).
// parse_strategy: kInvalidArgument naming the two for any other name. strategy_name: "default" for the unset value.
Result<wire::SharingStrategy> parse_strategy(std::string_view name);
const char* strategy_name(wire::SharingStrategy strategy);

}  // namespace batchd::daemon
