// shard_store_status.cc — ShardStore::status and ::dataset_view (shard_store.h): the store's counters, read under its
// lock for the status (data/remote_status.h fills the wire messages from them).
#include "remote/shard_store.h"

namespace batchd::daemon::remote {

// The store's counters (shard_store.h), read here with the rest of the status.
ShardStoreStatus ShardStore::status() const {
  MutexLock lock(&mu_);
  ShardStoreStatus st;
  st.dir = options_.dir;
  st.max_bytes = max_bytes_;
  st.bytes = bytes_;
  st.fetching = fetching_;
  st.files = orphans_.size();
  for (const Shard& s : shards_) st.files += s.state == State::kHere;
  st.totals = totals_;
  return st;
}

ShardStore::DatasetView ShardStore::dataset_view(const std::string& dataset, const std::vector<uint32_t>& ids) const {
  MutexLock lock(&mu_);
  DatasetView v;
  for (uint32_t id : ids) {
    const Shard& s = shards_.at(id);
    ++v.shards;
    v.bytes += s.object.size;
    if (s.state == State::kHere) {
      ++v.shards_here;
      v.bytes_here += s.object.size;
    }
  }
  if (auto it = per_dataset_.find(dataset); it != per_dataset_.end()) v.totals = it->second;
  return v;
}

}  // namespace batchd::daemon::remote
