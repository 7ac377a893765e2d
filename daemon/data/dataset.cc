#include "data/dataset.h"

#include "data/idx_dataset.h"
#include "data/imagefolder_dataset.h"
#include "data/token_dataset.h"
#include "data/webdataset_dataset.h"

#include <algorithm>
#include <utility>

namespace batchd::daemon {

Result<std::shared_ptr<const Dataset>> open_dataset(const DatasetConfig& c, const OpenContext& context) {
  if (c.format == "idx") {
    auto ds = IdxDataset::open(c.name, c.images, c.labels);
    if (!ds.ok()) return ds.error();
    return std::shared_ptr<const Dataset>(std::move(ds).value());
  }
  if (c.format == "imagefolder") {
    auto ds = ImageFolderDataset::open(c.name, c.root);
    if (!ds.ok()) return ds.error();
    return std::shared_ptr<const Dataset>(std::move(ds).value());
  }
  if (c.format == "tokens") {  // a quick open: one fstat and one mmap
    auto ds = TokenDataset::open(c);
    if (!ds.ok()) return ds.error();
    return std::shared_ptr<const Dataset>(std::move(ds).value());
  }
  if (c.format == "webdataset") {
    auto ds = WebDatasetDataset::open(c, context);
    if (!ds.ok()) return ds.error();
    return std::shared_ptr<const Dataset>(std::move(ds).value());
  }
  return Error(ErrorCode::kInvalidArgument, "unsupported format '" + c.format + "'");
}

bool opens_in_background(const DatasetConfig& c) { return c.format == "webdataset"; }

Result<Fingerprint> Dataset::fingerprint(const std::atomic<bool>*) const {
  return Error(ErrorCode::kInvalidArgument, std::string("datasets of format ") + format() + " have no fingerprint");
}

DatasetRegistry DatasetRegistry::open_all(const std::vector<DatasetConfig>& configs, const std::string& cache_dir) {
  DatasetRegistry registry;
  auto summary = registry.reload(configs, {}, cache_dir);
  for (const LoadJob& job : summary.jobs) {
    registry.install(job, open_dataset(job.config, OpenContext{cache_dir, job.progress.get(), nullptr}));
  }
  for (const FingerprintJob& job : registry.take_fingerprint_jobs()) {
    registry.set_fingerprint(job, job.dataset->fingerprint(&job.progress->cancel));
  }
  return registry;
}

DatasetRegistry::ReloadSummary DatasetRegistry::reload(const std::vector<DatasetConfig>& configs,
                                                       const std::set<std::string>& in_use,
                                                       const std::string& cache_dir) {
  ReloadSummary summary;
  std::map<std::string, Loaded> available;
  std::map<std::string, std::string> unavailable;
  std::map<std::string, Loading> loading;
  std::map<std::string, DatasetConfig> declared;
  for (const auto& c : configs) {
    declared[c.name] = c;
    auto old = configs_.find(c.name);
    if (old != configs_.end() && old->second == c) {  // unchanged: keep the loaded data, or the load under way
      if (auto it = available_.find(c.name); it != available_.end()) {
        std::string why = it->second.dataset->changed_on_disk();
        if (why.empty()) {
          available[c.name] = it->second;
          continue;
        }
        summary.changed_on_disk[c.name] = std::move(why);  // opened again below, like a changed entry
      }
      if (loading_.count(c.name) && !summary.changed_on_disk.count(c.name)) {
        loading[c.name] = loading_[c.name];
        continue;
      }
    }
    (old == configs_.end() ? summary.added : summary.changed).push_back(c.name);
    if (opens_in_background(c)) {
      LoadJob job{c, ++tickets_, std::make_shared<LoadProgress>()};
      loading[c.name] = Loading{job.ticket, job.progress};
      summary.jobs.push_back(std::move(job));
      continue;
    }
    auto ds = open_dataset(c, OpenContext{cache_dir, nullptr, nullptr});
    if (ds.ok()) {
      available[c.name] = Loaded{std::move(ds).value(), c.name + "#" + std::to_string(++loads_)};
    } else {
      unavailable[c.name] = ds.error().message();
      summary.unavailable.push_back(c.name);
    }
  }
  for (auto& [name, old] : loading_) {  // a load whose entry changed or went: tell its opener to give up
    if (!loading.count(name) || loading[name].ticket != old.ticket) old.progress->cancel = true;
  }
  std::map<std::string, std::shared_ptr<const Dataset>> retired;
  for (const auto& [name, loaded] : available_) {
    const bool kept = available.count(name) && available[name].key == loaded.key;
    if (!kept && in_use.count(loaded.key)) retired[loaded.key] = loaded.dataset;  // streams still read it
    if (!declared.count(name)) summary.removed.push_back(name);
  }
  for (const auto& [name, _] : unavailable_) {
    if (!declared.count(name)) summary.removed.push_back(name);
  }
  for (const auto& [name, _] : loading_) {
    if (!declared.count(name)) summary.removed.push_back(name);
  }
  for (const auto& [key, ds] : retired_) {
    if (in_use.count(key)) retired[key] = ds;
  }
  available_ = std::move(available);
  // Every available dataset's fingerprint is computed again (its files may have changed even if it was kept); the
  // fingerprints of data no longer available go, their jobs cancelled.
  for (auto it = fingerprints_.begin(); it != fingerprints_.end();) {
    const bool loaded = std::any_of(available_.begin(), available_.end(),
                                    [&](const auto& a) { return a.second.key == it->first; });
    if (loaded) {
      ++it;
      continue;
    }
    if (it->second.progress) it->second.progress->cancel = true;
    it = fingerprints_.erase(it);
  }
  std::erase_if(fingerprint_jobs_, [&](const FingerprintJob& j) { return !fingerprints_.count(j.key); });
  for (const auto& [name, loaded] : available_) queue_fingerprint(loaded);
  unavailable_ = std::move(unavailable);
  loading_ = std::move(loading);
  retired_ = std::move(retired);
  configs_ = std::move(declared);
  return summary;
}

bool DatasetRegistry::install(const LoadJob& job, Result<std::shared_ptr<const Dataset>> result) {
  const std::string& name = job.config.name;
  auto it = loading_.find(name);
  if (it == loading_.end() || it->second.ticket != job.ticket) return false;  // superseded by a reload
  loading_.erase(it);
  if (result.ok()) {
    available_[name] = Loaded{std::move(result).value(), name + "#" + std::to_string(++loads_)};
    queue_fingerprint(available_[name]);
  } else {
    unavailable_[name] = result.error().message();
  }
  return true;
}

void DatasetRegistry::queue_fingerprint(const Loaded& loaded) {
  FingerprintState& state = fingerprints_[loaded.key];
  if (state.progress) state.progress->cancel = true;  // superseded
  state.ticket = ++tickets_;
  state.progress = std::make_shared<LoadProgress>();
  state.result = Fingerprint{};
  state.status = "computing";
  std::erase_if(fingerprint_jobs_, [&](const FingerprintJob& j) { return j.key == loaded.key; });
  fingerprint_jobs_.push_back(FingerprintJob{loaded.key, state.ticket, loaded.dataset, state.progress});
}

std::vector<FingerprintJob> DatasetRegistry::take_fingerprint_jobs() { return std::exchange(fingerprint_jobs_, {}); }

bool DatasetRegistry::set_fingerprint(const FingerprintJob& job, Result<Fingerprint> result) {
  auto it = fingerprints_.find(job.key);
  if (it == fingerprints_.end() || it->second.ticket != job.ticket) return false;
  it->second.progress.reset();
  if (result.ok()) {
    it->second.result = std::move(result).value();
    it->second.status = "ready";
  } else {
    it->second.status = "failed: " + result.error().message();
  }
  return true;
}

std::string DatasetRegistry::loading_text(const LoadProgress& progress) {
  const uint64_t total = progress.total.load();
  if (total == 0) return "indexing (listing its shards)";
  return "indexing (" + std::to_string(progress.done.load()) + " of " + std::to_string(total) + " shards)";
}

std::string DatasetRegistry::key(const std::string& name) const {
  auto it = available_.find(name);
  return it == available_.end() ? "" : it->second.key;
}

Result<std::shared_ptr<const Dataset>> DatasetRegistry::find_key(const std::string& key) const {
  for (const auto& [name, loaded] : available_) {
    if (loaded.key == key) return loaded.dataset;
  }
  if (auto it = retired_.find(key); it != retired_.end()) return it->second;
  return Error(ErrorCode::kNotFound, "dataset data " + key + " is no longer loaded");
}

Result<std::shared_ptr<const Dataset>> DatasetRegistry::find(const std::string& name) const {
  if (auto it = available_.find(name); it != available_.end()) return it->second.dataset;
  if (auto it = unavailable_.find(name); it != unavailable_.end()) {
    return Error(ErrorCode::kUnavailable, "dataset '" + name + "' is declared but could not be opened: " +
                                              it->second);
  }
  if (auto it = loading_.find(name); it != loading_.end()) {
    return Error(ErrorCode::kUnavailable, "dataset '" + name + "' is " + loading_text(*it->second.progress) +
                                              "; it can be opened once that is done (batchctl datasets shows the "
                                              "progress), retry then");
  }
  std::string names;
  for (const auto& [n, _] : describe()) names += (names.empty() ? "" : ", ") + n;
  return Error(ErrorCode::kNotFound, "dataset '" + name + "' is not declared in the daemon's config (declared: " +
                                         (names.empty() ? "none" : names) + "); add a [datasets." + name +
                                         "] table to the config");
}

std::map<std::string, DatasetRegistry::Description> DatasetRegistry::describe() const {
  std::map<std::string, Description> out;
  for (const auto& [n, loaded] : available_) {
    Description& d = out[n];
    d.detail = loaded.dataset->summary();
    d.samples = loaded.dataset->size();
    if (auto fp = fingerprints_.find(loaded.key); fp != fingerprints_.end()) {
      d.fingerprint = fp->second.result;
      d.fingerprint_status = fp->second.status;
    }
  }
  for (const auto& [n, why] : unavailable_) {
    out[n].state = State::kUnavailable;
    out[n].detail = why;
  }
  for (const auto& [n, l] : loading_) {
    out[n].state = State::kLoading;
    out[n].detail = loading_text(*l.progress);
  }
  for (auto& [n, d] : out) {
    if (auto c = configs_.find(n); c != configs_.end()) d.format = c->second.format;
  }
  return out;
}

}  // namespace batchd::daemon
