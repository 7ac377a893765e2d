// dataset.h — named, read-only sources of samples, declared in the config and opened once at start-up.
//
// The registry is built in the daemon's main process before the workers are forked, so the workers share the
// decoded dataset pages copy-on-write instead of loading their own copies. A dataset that fails to open does not
// stop the daemon: it is listed as unavailable with the reason, and OpenStream on it returns that reason.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>
#include <memory>
#include <string>

#include "batchd/result.h"
#include "config.h"

namespace batchd::daemon {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual const std::string& name() const = 0;
  virtual const char* format() const = 0;
  virtual uint64_t size() const = 0;  // samples, indexed [0, size)
};

class DatasetRegistry final {
 public:
  // Opens every configured dataset; failures are recorded, not fatal.
  static DatasetRegistry open_all(const std::vector<DatasetConfig>& configs);

  // The dataset, or kNotFound (undeclared: lists the declared names) / kUnavailable (failed to open: why).
  Result<std::shared_ptr<const Dataset>> find(const std::string& name) const;
  // Every loaded dataset also has a key ("<name>#<load number>") that names exactly that data: streams record it
  // and workers attach by it, so a stream keeps reading the data it opened even after a reload changed or removed
  // the dataset (the old data is retired, and kept while a stream uses it).
  std::string key(const std::string& name) const;
  Result<std::shared_ptr<const Dataset>> find_key(const std::string& key) const;

  struct ReloadSummary {
    std::vector<std::string> added, removed, changed, unavailable;
  };
  // SIGHUP: applies a new dataset list. Unchanged datasets keep their loaded data; new or changed ones are opened;
  // replaced or removed data whose key is in `in_use_keys` is retired (kept for its streams) instead of dropped.
  ReloadSummary reload(const std::vector<DatasetConfig>& configs, const std::set<std::string>& in_use_keys);

  // Declared names with "" (available) or the error text (unavailable), sorted by name.
  std::map<std::string, std::string> describe() const;

 private:
  struct Loaded {
    std::shared_ptr<const Dataset> dataset;
    std::string key;
  };
  std::map<std::string, Loaded> available_;  // by name
  std::map<std::string, std::string> unavailable_;
  std::map<std::string, std::shared_ptr<const Dataset>> retired_;  // by key
  uint64_t loads_ = 0;
  std::map<std::string, DatasetConfig> configs_;  // as declared, to tell unchanged entries on reload
};

}  // namespace batchd::daemon
