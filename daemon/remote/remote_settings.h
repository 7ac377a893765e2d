// remote_settings.h — the [remote] settings of the daemon's TOML (config/config.h reads them): the remote layer's own
// settings type (docs/design.md, "Layers").
#pragma once

#include <cstdint>
#include <string>

namespace batchd::daemon {

// [remote] (issue 28): remote shards (s3://, http(s)://) fetched into daemon.cache_dir/shards (remote/shard_store.h).
// Read at start-up only.
struct RemoteSettings {
  // Bytes of fetched shards kept on disk under daemon.cache_dir. -1 (absent) = half of what the cache_dir's file
  // system has free at start-up (plus what is cached already); 0 = remote shards refused.
  int64_t cache_max_bytes = -1;
  uint32_t fetch_concurrency = 4;  // shards downloaded at once (all datasets and streams together)
  uint32_t prefetch_shards = 8;    // shards each stream asks for ahead of the batches being made; 0 = none
  double connect_timeout_s = 10;   // per connection attempt
  double stall_timeout_s = 30;     // a transfer moving < 1 byte/s this long is aborted (and retried)
  double request_timeout_s = 600;  // one request, whole; 0 = none (the stall bound still holds)
  uint32_t retries = 5;            // attempts after the first for 5xx, resets, timeouts, truncated bodies
  double backoff_base_s = 0.1;     // retry n sleeps uniform(0, min(backoff_max_s, backoff_base_s * 2^n))
  double backoff_max_s = 5;
  std::string ca_file;             // PEM CAs for https ("" = the system's)
};

}  // namespace batchd::daemon
