// cache_wire.cc — batchd/cache_status.h to and from proto/batchd.proto's CacheStatus, field for field (admin_wire.h).
#include "admin_wire.h"

namespace batchd::detail {

CacheStatus from_wire(const wire::CacheStatus& w) {
  CacheStatus s{.enabled = w.enabled(),
                .max_bytes = w.max_bytes(),
                .max_bytes_per_uid = w.max_bytes_per_uid(),
                .live_bytes = w.live_bytes(),
                .resident_bytes = w.resident_bytes(),
                .index_slots = w.index_slots(),
                .index_used = w.index_used(),
                .dropped_bytes = w.dropped_bytes(),
                .refused_full = w.refused_full(),
                .refused_uid = w.refused_uid(),
                .refused_index = w.refused_index(),
                .evicted_bytes = w.evicted_bytes(),
                .segments = w.segments(),
                .segments_free = w.segments_free(),
                .churn_bytes = w.churn_bytes(),
                .hits = w.hits(),
                .fills = w.fills(),
                .uncached = w.uncached(),
                .groups = {}};
  for (const auto& g : w.groups()) {
    s.groups.push_back({.dataset = g.dataset(),
                        .load = g.load(),
                        .current = g.current(),
                        .prefix = g.prefix(),
                        .prefix_id = g.prefix_id(),
                        .entries = g.entries(),
                        .bytes = g.bytes(),
                        .filling = g.filling(),
                        .dataset_samples = g.dataset_samples(),
                        .hits = g.hits(),
                        .fills = g.fills(),
                        .uncached = g.uncached()});
  }
  return s;
}

wire::CacheStatus to_wire(const CacheStatus& s) {
  wire::CacheStatus w;
  w.set_enabled(s.enabled);
  w.set_max_bytes(s.max_bytes);
  w.set_max_bytes_per_uid(s.max_bytes_per_uid);
  w.set_live_bytes(s.live_bytes);
  w.set_resident_bytes(s.resident_bytes);
  w.set_index_slots(s.index_slots);
  w.set_index_used(s.index_used);
  w.set_dropped_bytes(s.dropped_bytes);
  w.set_refused_full(s.refused_full);
  w.set_refused_uid(s.refused_uid);
  w.set_refused_index(s.refused_index);
  w.set_evicted_bytes(s.evicted_bytes);
  w.set_segments(s.segments);
  w.set_segments_free(s.segments_free);
  w.set_churn_bytes(s.churn_bytes);
  w.set_hits(s.hits);
  w.set_fills(s.fills);
  w.set_uncached(s.uncached);
  for (const auto& g : s.groups) {
    auto* x = w.add_groups();
    x->set_dataset(g.dataset);
    x->set_load(g.load);
    x->set_current(g.current);
    x->set_prefix(g.prefix);
    x->set_prefix_id(g.prefix_id);
    x->set_entries(g.entries);
    x->set_bytes(g.bytes);
    x->set_filling(g.filling);
    x->set_dataset_samples(g.dataset_samples);
    x->set_hits(g.hits);
    x->set_fills(g.fills);
    x->set_uncached(g.uncached);
  }
  return w;
}

}  // namespace batchd::detail
