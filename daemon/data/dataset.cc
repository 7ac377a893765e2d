#include "data/dataset.h"

#include "data/idx_dataset.h"
#include "data/imagefolder_dataset.h"

namespace batchd::daemon {

namespace {

Result<std::shared_ptr<const Dataset>> open_dataset(const DatasetConfig& c) {
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
  return Error(ErrorCode::kInvalidArgument, "unsupported format '" + c.format + "'");
}

bool same(const DatasetConfig& a, const DatasetConfig& b) {
  return a.format == b.format && a.images == b.images && a.labels == b.labels && a.root == b.root;
}

}  // namespace

DatasetRegistry DatasetRegistry::open_all(const std::vector<DatasetConfig>& configs) {
  DatasetRegistry registry;
  registry.reload(configs, {});
  return registry;
}

DatasetRegistry::ReloadSummary DatasetRegistry::reload(const std::vector<DatasetConfig>& configs,
                                                       const std::set<std::string>& in_use) {
  ReloadSummary summary;
  std::map<std::string, Loaded> available;
  std::map<std::string, std::string> unavailable;
  std::map<std::string, DatasetConfig> declared;
  for (const auto& c : configs) {
    declared[c.name] = c;
    auto old = configs_.find(c.name);
    if (old != configs_.end() && same(old->second, c) && available_.count(c.name)) {
      available[c.name] = available_[c.name];  // unchanged: keep the loaded data
      continue;
    }
    (old == configs_.end() ? summary.added : summary.changed).push_back(c.name);
    auto ds = open_dataset(c);
    if (ds.ok()) {
      available[c.name] = Loaded{std::move(ds).value(), c.name + "#" + std::to_string(++loads_)};
    } else {
      unavailable[c.name] = ds.error().message();
      summary.unavailable.push_back(c.name);
    }
  }
  std::map<std::string, std::shared_ptr<const Dataset>> retired;
  for (const auto& [name, loaded] : available_) {
    const bool kept = available.count(name) && available[name].key == loaded.key;
    if (!kept && in_use.count(loaded.key)) retired[loaded.key] = loaded.dataset;  // streams still read it
    if (!declared.count(name)) summary.removed.push_back(name);
  }
  for (const auto& [key, ds] : retired_) {
    if (in_use.count(key)) retired[key] = ds;
  }
  available_ = std::move(available);
  unavailable_ = std::move(unavailable);
  retired_ = std::move(retired);
  configs_ = std::move(declared);
  return summary;
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
  std::string names;
  for (const auto& [n, _] : describe()) names += (names.empty() ? "" : ", ") + n;
  return Error(ErrorCode::kNotFound, "dataset '" + name + "' is not declared in the daemon's config (declared: " +
                                         (names.empty() ? "none" : names) + "); add a [datasets." + name +
                                         "] table to the config");
}

std::map<std::string, std::string> DatasetRegistry::describe() const {
  std::map<std::string, std::string> out;
  for (const auto& [n, _] : available_) out[n] = "";
  for (const auto& [n, why] : unavailable_) out[n] = why;
  return out;
}

}  // namespace batchd::daemon
