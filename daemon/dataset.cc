#include "dataset.h"

#include "idx_dataset.h"
#include "imagefolder_dataset.h"

namespace batchd::daemon {

DatasetRegistry DatasetRegistry::open_all(const std::vector<DatasetConfig>& configs) {
  DatasetRegistry registry;
  for (const auto& c : configs) {
    if (c.format == "idx") {
      auto ds = IdxDataset::open(c.name, c.images, c.labels);
      if (ds.ok()) {
        registry.available_[c.name] = std::move(ds).value();
      } else {
        registry.unavailable_[c.name] = ds.error().message();
      }
    } else if (c.format == "imagefolder") {
      auto ds = ImageFolderDataset::open(c.name, c.root);
      if (ds.ok()) {
        registry.available_[c.name] = std::move(ds).value();
      } else {
        registry.unavailable_[c.name] = ds.error().message();
      }
    } else {
      registry.unavailable_[c.name] = "unsupported format '" + c.format + "'";
    }
  }
  return registry;
}

Result<std::shared_ptr<const Dataset>> DatasetRegistry::find(const std::string& name) const {
  if (auto it = available_.find(name); it != available_.end()) return std::shared_ptr<const Dataset>(it->second);
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
