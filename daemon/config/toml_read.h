// toml_read.h — reading the daemon's TOML configuration (toml++) with errors that name the file, the line and the
// key: "<file>:<line>: key 'daemon.workers': <why>". Used by config.cc and pipeline_config.cc. Absent keys leave
// the output untouched (the caller's default stands); a key of the wrong type or out of range is kInvalidArgument.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon {

// kInvalidArgument "<source>:<line of node>: key '<key>': <why>".
Error bad(const std::string& source, const toml::node& node, const std::string& key, const std::string& why);

// kInvalidArgument naming the first key of `table` not in `known` (and listing the known ones); keys are named
// prefix + key.
Status reject_unknown(const toml::table& table, const std::set<std::string>& known, const std::string& prefix,
                      const std::string& source);

Status read_string(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                   std::string* out);
// A string or an array of strings (at least one element when present); appended to *out.
Status read_string_list(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                        std::vector<std::string>* out);
Status read_bool(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                 bool* out);

// Reads a number (an integer or a float) into *out if present, checking [lo, hi].
Status read_number(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                   double lo, double hi, double* out);

// Reads an integer key into *out if present, checking [lo, hi].
template <typename T>
Status read_int(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                int64_t lo, int64_t hi, T* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return ok_status();
  const auto v = node->value<int64_t>();
  if (!node->is_integer() || !v) return bad(source, *node, prefix + key, "must be an integer");
  if (*v < lo || *v > hi) {
    return bad(source, *node, prefix + key,
               std::to_string(*v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<T>(*v);
  return ok_status();
}

}  // namespace batchd::daemon
