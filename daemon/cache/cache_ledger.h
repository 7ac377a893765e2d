// cache_ledger.h — the daemon's view of its sample cache (sample_cache.h), for batchctl cache, the metrics and
// batchctl cache --drop: which (dataset load, op prefix) groups exist, with names to show, and what the cache did
// for them (hits, fills, uncached samples, summed from the workers' WorkerDone.stages).
//
// A stream whose spec has a cache point is registered when it opens (its dataset's key "<name>#<load>", the dataset's
// size, and the prefix: cache_point.h cache_prefix); its tasks' counts are added as they are done. Groups outlive
// their streams (a later stream reading the same prefix hits the same entries). Not thread-safe: the daemon's event
// loop only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "batchd.pb.h"
#include "cache/sample_cache.h"

namespace batchd::daemon {

class CacheLedger {
 public:
  explicit CacheLedger(SampleCache* cache) : cache_(cache) {}  // cache null: no cache (status says so)

  // A stream reads `dataset_key` ("<name>#<load>", of `samples` samples) through a cache point whose prefix is
  // `prefix_id` / `prefix_text`.
  void add_stream(uint64_t stream_id, const std::string& dataset_key, uint64_t samples, uint64_t prefix_id,
                  const std::string& prefix_text);
  void remove_stream(uint64_t stream_id) { streams_.erase(stream_id); }
  // A task of the stream is done: its counts (WorkerDone.stages cache_*).
  void count(uint64_t stream_id, const wire::StageNanos& stages);

  // Totals always; the groups when `groups` (admins). `current_key(name)`: the key a dataset's streams open now.
  template <typename CurrentKey>
  void fill(wire::CacheStatus* out, bool groups, const CurrentKey& current_key) const {
    fill_totals(out);
    if (!groups || cache_ == nullptr) return;
    std::set<std::pair<uint64_t, uint64_t>> listed;
    for (const auto& g : cache_->groups()) {
      fill_group(g.dataset, g.prefix, &g, out, current_key);
      listed.insert({g.dataset, g.prefix});
    }
    for (const auto& [k, c] : counts_) {  // groups with counts and no entry (dropped, or nothing admitted)
      if (!listed.count(k)) fill_group(k.first, k.second, nullptr, out, current_key);
    }
  }

  // Drops the ready entries of every load of dataset `name` ("" = all); returns (entries, bytes).
  std::pair<uint64_t, uint64_t> drop(const std::string& name);
  // Drops the entries of the dataset loads whose keys are not in `current` (a reload replaced or removed them).
  uint64_t drop_stale(const std::function<bool(const std::string& key)>& is_current);

 private:
  struct Counts {
    uint64_t hits = 0, fills = 0, uncached = 0;
  };
  struct Dataset {
    std::string key;  // "<name>#<load>"
    uint64_t samples = 0;
  };
  void fill_totals(wire::CacheStatus* out) const;
  template <typename CurrentKey>
  void fill_group(uint64_t dataset, uint64_t prefix, const CacheGroup* g, wire::CacheStatus* out,
                  const CurrentKey& current_key) const {
    auto d = datasets_.find(dataset);
    if (d == datasets_.end()) return;  // not made by a stream of this daemon's ledger (cannot happen)
    auto* info = out->add_groups();
    const std::string& key = d->second.key;
    const size_t hash = key.rfind('#');
    info->set_dataset(key.substr(0, hash));
    info->set_load(hash == std::string::npos ? 0 : std::stoull(key.substr(hash + 1)));
    info->set_current(current_key(info->dataset()) == key);
    auto p = prefixes_.find(prefix);
    info->set_prefix(p != prefixes_.end() ? p->second : "");
    info->set_prefix_id(prefix);
    if (g != nullptr) {
      info->set_entries(g->entries);
      info->set_bytes(g->bytes);
      info->set_filling(g->filling);
    }
    info->set_dataset_samples(d->second.samples);
    if (auto c = counts_.find({dataset, prefix}); c != counts_.end()) {
      info->set_hits(c->second.hits);
      info->set_fills(c->second.fills);
      info->set_uncached(c->second.uncached);
    }
  }

  SampleCache* cache_;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> streams_;  // stream id -> (dataset hash, prefix id)
  std::map<uint64_t, Dataset> datasets_;                       // dataset hash -> key and size
  std::map<uint64_t, std::string> prefixes_;                   // prefix id -> text
  std::map<std::pair<uint64_t, uint64_t>, Counts> counts_;
  Counts total_;
};

}  // namespace batchd::daemon
