// remote_status.cc — data/remote_status.h: a remote webdataset's shards and the shard cache's totals in the status.
#include "data/remote_status.h"

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
