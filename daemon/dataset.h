// dataset.h — named, read-only sources of samples, declared in the config and opened once at start-up.
//
// The registry is built in the daemon's main process before the workers are forked, so the workers share the
// decoded dataset pages copy-on-write instead of loading their own copies. A dataset that fails to open does not
// stop the daemon: it is listed as unavailable with the reason, and OpenStream on it returns that reason.
#pragma once

#include <cstdint>
#include <map>
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

  // Declared names with "" (available) or the error text (unavailable), sorted by name.
  std::map<std::string, std::string> describe() const;

 private:
  std::map<std::string, std::shared_ptr<const Dataset>> available_;
  std::map<std::string, std::string> unavailable_;
};

}  // namespace batchd::daemon
