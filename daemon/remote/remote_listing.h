// remote_listing.h — a webdataset's remote `shards` patterns expanded into the ordered list of remote objects.
//
// Each pattern is brace-expanded as local patterns are (base/shard_spec.h, Python's braceexpand, what
// webdataset.WebDataset(urls) does). Each result is then:
//   - an s3:// URL whose key holds a glob metacharacter (* ? [): the bucket is listed under the key's part before the
//     first metacharacter (ListObjectsV2, every page) and the keys matching the pattern kept (fnmatch(3) with
//     FNM_PATHNAME: '*' does not cross '/', as glob(3) on local paths), sorted by key; none: kNotFound naming it;
//     A matched key that parse_remote_url refuses (a control character: the server's text) fails the load, named
//     escaped;
//   - an http(s):// URL whose path holds one ('*', '['): refused (HTTP has no listing: name the shards with a brace
//     range). Only the path: a query (a presigned URL's ?X-Amz-Signature=...) is no pattern, it is kept and sent
//     as it is, and errors show it as "?..."; an IPv6 host's brackets are no pattern either;
//   - any other URL: one HEAD (its size and ETag; 404/403 fail the load naming the URL and the fix).
// Order: the patterns' order, then each one's expansion order. The same URL twice is refused (its samples would be
// read twice an epoch); at most max_shards URLs. *cancel (may be null) is polled between requests.
// Runs on the dataset loader's thread; logs nothing.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "batchd/result.h"
#include "remote/object_store.h"

namespace batchd::daemon::remote {

Result<std::vector<RemoteObject>> expand_remote_shards(const std::vector<std::string>& patterns, const std::string& key,
                                                       ObjectStore& store, size_t max_shards,
                                                       const std::atomic<bool>* cancel);

}  // namespace batchd::daemon::remote
