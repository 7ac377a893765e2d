#include "config/toml_read.h"

namespace batchd::daemon {

Error bad(const std::string& source, const toml::node& node, const std::string& key, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument,
               source + ":" + std::to_string(node.source().begin.line) + ": key '" + key + "': " + why);
}

Status reject_unknown(const toml::table& table, const std::set<std::string>& known, const std::string& prefix,
                      const std::string& source) {
  for (const auto& [k, v] : table) {
    const std::string key(k.str());
    if (!known.count(key)) {
      std::string list;
      for (const auto& name : known) list += (list.empty() ? "" : ", ") + name;
      return bad(source, v, prefix + key, "unknown key (known keys here: " + list + ")");
    }
  }
  return ok_status();
}

Status read_string(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                   std::string* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return ok_status();
  if (!node->is_string()) return bad(source, *node, prefix + key, "must be a string");
  *out = *node->value<std::string>();
  return ok_status();
}

Status read_string_list(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                        std::vector<std::string>* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return ok_status();
  if (node->is_string()) {
    out->push_back(*node->value<std::string>());
    return ok_status();
  }
  const toml::array* a = node->as_array();
  if (a == nullptr || a->empty()) return bad(source, *node, prefix + key, "must be a string or an array of strings");
  for (const auto& e : *a) {
    if (!e.is_string()) return bad(source, e, prefix + key, "must be a string or an array of strings");
    out->push_back(*e.value<std::string>());
  }
  return ok_status();
}

Status read_bool(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                 bool* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return ok_status();
  if (!node->is_boolean()) return bad(source, *node, prefix + key, "must be true or false");
  *out = *node->value<bool>();
  return ok_status();
}

Status read_number(const toml::table& t, const char* key, const std::string& prefix, const std::string& source,
                   double lo, double hi, double* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return ok_status();
  const auto v = node->value<double>();
  if (!(node->is_integer() || node->is_floating_point()) || !v) return bad(source, *node, prefix + key, "must be a number");
  if (!(*v >= lo && *v <= hi)) {
    return bad(source, *node, prefix + key,
               std::to_string(*v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = *v;
  return ok_status();
}

}  // namespace batchd::daemon
