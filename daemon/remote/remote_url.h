// remote_url.h — what a webdataset's `shards` entry names when it is not a local path: s3://BUCKET/KEY or
// http(s)://HOST[:PORT]/PATH.
//
// is_remote(): the text starts with "s3://", "http://" or "https://" (case-sensitive, as aws-cli and curl read them).
// parse_remote_url() checks one expanded URL: a bucket of 3-63 characters (lower-case letters, digits, '.', '-'), a
// key of at most 1024 bytes, no glob metacharacter outside an s3 listing pattern; http(s): a host, no userinfo
// ("user:password@" is refused: credentials never go in a URL, they would reach logs and status), no fragment.
// redact() is what errors, logs and status print: the URL with a query string shown as "?..." (a presigned URL's
// signature is a secret).
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
};

bool is_remote(std::string_view text);

// `key` names the config key in errors ("datasets.train.shards"). kInvalidArgument naming the URL (redacted) and
// what is wrong.
Result<RemoteUrl> parse_remote_url(const std::string& text, const std::string& key);

std::string redact(std::string_view url);

}  // namespace batchd::daemon::remote
