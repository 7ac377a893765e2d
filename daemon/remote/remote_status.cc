#include "remote/remote_status.h"

#include "data/webdataset_dataset.h"

namespace batchd::daemon {

namespace {

void fill_totals(const remote::FetchTotals& t, wire::RemoteShardsInfo* w) {
  w->set_fetched(t.fetched);
  w->set_fetched_bytes(t.fetched_bytes);
  w->set_prefetched(t.prefetched);
  w->set_waited(t.waited);
  w->set_failed(t.failed);
  w->set_evicted(t.evicted);
}

}  // namespace

void fill_remote_status(const DatasetRegistry& datasets, const remote::ShardStore* store, wire::StatusReply* status) {
  if (store == nullptr) return;
  for (auto& entry : *status->mutable_dataset_entries()) {
    auto found = datasets.find(entry.name());
    if (!found.ok()) continue;
    auto web = std::dynamic_pointer_cast<const WebDatasetDataset>(*found);
    if (web == nullptr || !web->is_remote()) continue;
    const remote::ShardStore::DatasetView v = store->dataset_view(entry.name(), web->shard_ids());
    wire::RemoteShardsInfo* w = entry.mutable_remote();
    w->set_shards(v.shards);
    w->set_shards_here(v.shards_here);
    w->set_bytes(v.bytes);
    w->set_bytes_here(v.bytes_here);
    fill_totals(v.totals, w);
  }
  const remote::ShardStoreStatus st = store->status();
  wire::RemoteCacheInfo* c = status->mutable_remote_cache();
  c->set_enabled(true);
  c->set_dir(st.dir);
  c->set_max_bytes(st.max_bytes);
  c->set_bytes(st.bytes);
  c->set_files(st.files);
  c->set_fetching(st.fetching);
  fill_totals(st.totals, c->mutable_totals());
}

}  // namespace batchd::daemon

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
