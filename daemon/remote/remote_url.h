// remote_url.h — what a webdataset's `shards` entry names when it is not a local path: s3://BUCKET/KEY or
// http(s)://HOST[:PORT]/PATH.
//
// is_remote(): the text starts with "s3://", "http://" or "https://" (case-sensitive, as aws-cli and curl read them).
// parse_remote_url() checks one expanded URL: a bucket of 3-63 characters (lower-case letters, digits, '.', '-'), a
// key of at most 1024 bytes of UTF-8 without control characters, glob metacharacters ('*', '?', '[') only in the
// key's last segment (an s3 listing pattern: `is_pattern`, `list_prefix`); http(s): what libcurl's URL parser
// accepts (CURLU, no spaces), a host, no userinfo ("user:password@" is refused: credentials never go in a URL, they
// would reach logs and status), no fragment, no '*' (HTTP has no listing).
// redact() is what errors, logs and status print: the URL with a query string shown as "?..." (a presigned URL's
// signature is a secret), escaped (wire/printable.h: a key from a listing may hold a newline or an ESC).
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "batchd/result.h"

namespace batchd::daemon::remote {

enum class Scheme { kS3, kHttp, kHttps };

struct RemoteUrl {
  Scheme scheme = Scheme::kS3;
  std::string bucket;  // s3 only
  std::string key;     // s3: the object key (no leading '/'); may be "" for a listing of the whole bucket
  std::string url;     // http(s): the URL as given; s3: "s3://bucket/key"
  // s3 only: the key's last segment is a glob pattern ("s3://b/train/*.tar"): list list_prefix ("train/", the key
  // up to and including its last '/', "" at the bucket's top) and match the keys against the pattern (fnmatch).
  bool is_pattern = false;
  std::string list_prefix;
};

bool is_remote(std::string_view text);

// `key` names the config key in errors ("datasets.train.shards"). kInvalidArgument naming the URL (redacted) and
// what is wrong.
Result<RemoteUrl> parse_remote_url(const std::string& text, const std::string& key);

std::string redact(std::string_view url);

}  // namespace batchd::daemon::remote
