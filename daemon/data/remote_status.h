// data/remote_status.h — remote shards in the daemon's status (batchctl datasets, Admin::status, the metrics): each
// remote webdataset's shards on this host (DatasetInfo.remote) and the shard cache's totals (StatusReply.remote_cache).
// Nothing here is a secret: URLs are not listed, counts and bytes only. The event loop's thread.
#pragma once

#include "batchd.pb.h"
#include "data/dataset.h"
#include "remote/shard_store.h"

namespace batchd::daemon {

// Fills status->dataset_entries(i).remote for the remote datasets among them, and status->remote_cache (enabled
// false without a store).
void fill_remote_status(const DatasetRegistry& datasets, const remote::ShardStore* store, wire::StatusReply* status);

}  // namespace batchd::daemon
