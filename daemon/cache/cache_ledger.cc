#include "cache/cache_ledger.h"

namespace batchd::daemon {

void CacheLedger::add_stream(uint64_t stream_id, const std::string& dataset_key, uint64_t samples, uint64_t prefix_id,
                             const std::string& prefix_text) {
  const uint64_t dataset = cache_hash(dataset_key);
  streams_[stream_id] = {dataset, prefix_id};
  datasets_[dataset] = Dataset{dataset_key, samples};
  prefixes_[prefix_id] = prefix_text;
}

void CacheLedger::count(uint64_t stream_id, const wire::StageNanos& stages) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;
  Counts& c = counts_[it->second];
  for (Counts* k : {&c, &total_}) {
    k->hits += stages.cache_hits();
    k->fills += stages.cache_fills();
    k->uncached += stages.cache_uncached();
  }
}

void CacheLedger::fill_totals(wire::CacheStatus* out) const {
  out->set_hits(total_.hits);
  out->set_fills(total_.fills);
  out->set_uncached(total_.uncached);
  if (cache_ == nullptr) return;
  const CacheTotals t = cache_->totals();
  out->set_enabled(true);
  out->set_max_bytes(t.max_bytes);
  out->set_max_bytes_per_uid(t.max_bytes_per_uid);
  out->set_live_bytes(t.live_bytes);
  out->set_resident_bytes(t.resident_bytes);
  out->set_index_slots(t.index_slots);
  out->set_index_used(t.index_used);
  out->set_dropped_bytes(t.dropped_bytes);
  out->set_refused_full(t.refused_full);
  out->set_refused_uid(t.refused_uid);
  out->set_refused_index(t.refused_index);
  out->set_evicted_bytes(t.evicted_bytes);
  out->set_segments(t.segments);
  out->set_segments_free(t.segments_free);
  out->set_churn_bytes(t.churn_bytes);
}

std::pair<uint64_t, uint64_t> CacheLedger::drop(const std::string& name) {
  if (cache_ == nullptr) return {0, 0};
  return cache_->drop([&](uint64_t dataset, uint64_t) {
    if (name.empty()) return true;
    auto d = datasets_.find(dataset);
    return d != datasets_.end() && d->second.key.substr(0, d->second.key.rfind('#')) == name;
  });
}

uint64_t CacheLedger::drop_stale(const std::function<bool(const std::string& key)>& is_current) {
  if (cache_ == nullptr) return 0;
  return cache_->drop([&](uint64_t dataset, uint64_t) {
    auto d = datasets_.find(dataset);
    return d != datasets_.end() && !is_current(d->second.key);
  }).second;
}

}  // namespace batchd::daemon
