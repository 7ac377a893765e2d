#include "remote/remote_listing.h"

#include <fnmatch.h>

#include <set>

#include "base/shard_spec.h"
#include "remote/remote_url.h"

namespace batchd::daemon::remote {
namespace {

// Where the first glob metacharacter of `text` is (npos: none). s3: anywhere after "s3://" ('*', '?', '['; the
// bucket holding one is refused by the caller). http(s): in the path alone ('*', '['): not in the host (an IPv6
// literal's brackets), not in the query ('?' starts it; a presigned URL's query is sent as it is).
size_t glob_at(const std::string& text) {
  const size_t host = text.find("://") + 3;
  if (text.rfind("s3://", 0) == 0) return text.find_first_of("*?[", host);
  const size_t path = text.find('/', host);
  if (path == std::string::npos) return std::string::npos;
  const size_t glob = text.find_first_of("*[", path);
  return glob < text.find_first_of("?#", path) ? glob : std::string::npos;
}

}  // namespace

Result<std::vector<RemoteObject>> expand_remote_shards(const std::vector<std::string>& patterns, const std::string& key,
                                                       ObjectStore& store, size_t max_shards,
                                                       const std::atomic<bool>* cancel) {
  std::vector<RemoteObject> out;
  std::set<std::string> seen;
  auto add = [&](RemoteObject object) -> Status {
    if (!seen.insert(object.url).second) {
      return Error(ErrorCode::kInvalidArgument, key + " names " + redact(object.url) + " twice: its samples would "
                                                "be read twice an epoch; list each shard once");
    }
    if (out.size() >= max_shards) {
      return Error(ErrorCode::kInvalidArgument, key + " names more than " + std::to_string(max_shards) + " shards");
    }
    out.push_back(std::move(object));
    return ok_status();
  };
  for (const std::string& pattern : patterns) {
    auto texts = brace_expand(pattern, max_shards);
    if (!texts.ok()) return Error(texts.error().code(), key + ": " + texts.error().message());
    for (const std::string& text : *texts) {
      if (cancel != nullptr && cancel->load()) return Error(ErrorCode::kUnavailable, "cancelled");
      const size_t glob = glob_at(text);
      if (glob == std::string::npos) {
        auto url = parse_remote_url(text, key);
        if (!url.ok()) return url.error();
        auto object = store.stat(url->url);
        if (!object.ok()) return object.error();
        BATCHD_RETURN_IF_ERROR(add(std::move(object).value()));
        continue;
      }
      if (text.rfind("s3://", 0) != 0) {
        return Error(ErrorCode::kInvalidArgument,
                     key + ": " + redact(text) + " holds a glob, but HTTP has no listing: name the shards with a "
                     "brace range (shard-{000000..000099}.tar), or use an s3:// URL");
      }
      const size_t slash = text.find('/', 5);
      if (slash == std::string::npos || slash > glob) {
        return Error(ErrorCode::kInvalidArgument, key + ": " + redact(text) + ": the bucket name cannot hold a glob");
      }
      const std::string bucket = text.substr(5, slash - 5), key_pattern = text.substr(slash + 1);
      const std::string prefix_url = text.substr(0, glob);
      if (auto parsed = parse_remote_url(prefix_url, key); !parsed.ok()) return parsed.error();
      auto listed = store.list(prefix_url, max_shards);
      if (!listed.ok()) return Error(listed.error().code(), key + ": " + listed.error().message());
      size_t matched = 0;
      for (RemoteObject& object : *listed) {
        const std::string object_key = object.url.substr(5 + bucket.size() + 1);
        if (::fnmatch(key_pattern.c_str(), object_key.c_str(), FNM_PATHNAME) != 0) continue;
        // A listed key is the server's text: one that could not be fetched (a control character, not UTF-8) fails
        // the load here, named escaped (redact), not each epoch.
        if (auto checked = parse_remote_url(object.url, key); !checked.ok()) return checked.error();
        ++matched;
        BATCHD_RETURN_IF_ERROR(add(std::move(object)));
      }
      if (matched == 0) {
        return Error(ErrorCode::kNotFound, key + ": " + redact(text) + " matches no object (listed " +
                                               std::to_string(listed->size()) + " under " + redact(prefix_url) +
                                               "); check the bucket, the prefix and the credentials' region");
      }
    }
  }
  return out;
}

}  // namespace batchd::daemon::remote
