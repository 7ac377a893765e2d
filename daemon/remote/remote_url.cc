#include "remote/remote_url.h"

#include <algorithm>

#include "batchd/wire/printable.h"
#include "batchd/wire/utf8.h"
#include "remote/curl_handle.h"

namespace batchd::daemon::remote {
namespace {

constexpr std::string_view kS3 = "s3://", kHttp = "http://", kHttps = "https://";
constexpr size_t kMaxKeyBytes = 1024;  // S3's limit on a key's length (UTF-8 bytes)

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

Error invalid(const std::string& key, std::string_view url, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, key + ": " + redact(url) + ": " + what);
}

// S3's bucket naming rules (general purpose buckets): 3-63 characters of a-z 0-9 . -, starting and ending with a
// letter or digit.
bool valid_bucket(const std::string& b) {
  if (b.size() < 3 || b.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(b.front()) || !alnum(b.back())) return false;
  return std::all_of(b.begin(), b.end(), [&](char c) { return alnum(c) || c == '.' || c == '-'; });
}

Result<RemoteUrl> parse_s3(const std::string& text, const std::string& key) {
  RemoteUrl out;
  out.scheme = Scheme::kS3;
  const std::string rest = text.substr(kS3.size());
  const size_t slash = rest.find('/');
  out.bucket = rest.substr(0, slash);
  out.key = slash == std::string::npos ? "" : rest.substr(slash + 1);
  out.url = text;
  if (!valid_bucket(out.bucket)) {
    return invalid(key, text, "the bucket name must be 3 to 63 characters of lower-case letters, digits, '.' and '-', "
                              "starting and ending with a letter or digit (path-style addressing)");
  }
  if (out.key.size() > kMaxKeyBytes) return invalid(key, text, "the key is longer than S3's 1024 bytes");
  if (wire::bounded_utf8(out.key, out.key.size()) != out.key) return invalid(key, text, "the key is not UTF-8");
  if (std::any_of(out.key.begin(), out.key.end(), [](char c) { return (c >= 0 && c < 0x20) || c == 0x7f; })) {
    return invalid(key, text, "the key holds a control character");
  }
  const size_t glob = out.key.find_first_of("*?[");
  if (glob != std::string::npos) {
    const size_t last_slash = out.key.rfind('/');
    if (last_slash != std::string::npos && last_slash > glob) {
      return invalid(key, text, "a pattern ('*', '?', '[') may only be in the key's last segment (the listing is of "
                                "one prefix): name the folders, or use {a,b} braces");
    }
    out.is_pattern = true;
    out.list_prefix = last_slash == std::string::npos ? "" : out.key.substr(0, last_slash + 1);
  }
  return out;
}

Result<RemoteUrl> parse_http(const std::string& text, const std::string& key, Scheme scheme) {
  CurlUrl u;
  if (u.get() == nullptr) return Error(ErrorCode::kResourceExhausted, key + ": libcurl could not allocate a URL");
  if (CURLUcode rc = curl_url_set(u.get(), CURLUPART_URL, text.c_str(), 0); rc != CURLUE_OK) {
    return invalid(key, text, std::string("not a URL libcurl accepts (") + curl_url_strerror(rc) +
                                  "): percent-encode spaces and special characters");
  }
  if (!u.part(CURLUPART_USER).empty() || !u.part(CURLUPART_PASSWORD).empty()) {
    return invalid(key, text, "credentials in a URL (user:password@) would reach logs and status: serve the shards "
                              "without them, or from S3 with credentials the AWS way");
  }
  if (u.part(CURLUPART_HOST).empty()) return invalid(key, text, "no host");
  if (!u.part(CURLUPART_FRAGMENT).empty() || text.find('#') != std::string::npos) {
    return invalid(key, text, "a fragment ('#') is never sent to a server: remove it");
  }
  if (u.part(CURLUPART_PATH).find('*') != std::string::npos) {
    return invalid(key, text, "HTTP has no listing, so '*' cannot match: name each shard (braces {000..099}) or use "
                              "s3://");
  }
  RemoteUrl out;
  out.scheme = scheme;
  out.url = text;
  return out;
}

}  // namespace

bool is_remote(std::string_view text) {
  return starts_with(text, kS3) || starts_with(text, kHttp) || starts_with(text, kHttps);
}

Result<RemoteUrl> parse_remote_url(const std::string& text, const std::string& key) {
  if (starts_with(text, kS3)) return parse_s3(text, key);
  if (starts_with(text, kHttp)) return parse_http(text, key, Scheme::kHttp);
  if (starts_with(text, kHttps)) return parse_http(text, key, Scheme::kHttps);
  return invalid(key, text, "not a remote URL (s3://, http:// or https://)");
}

std::string redact(std::string_view url) {
  if (!starts_with(url, kHttp) && !starts_with(url, kHttps)) return wire::printable(url);
  std::string out(url.substr(0, url.find('#')));
  if (const size_t q = out.find('?'); q != std::string::npos) out = out.substr(0, q) + "?...";
  const size_t host = out.find("://") + 3;
  const size_t at = out.find('@', host);
  if (at != std::string::npos && at < out.find_first_of("/?", host)) out.replace(host, at - host, "...");
  return wire::printable(out);
}

}  // namespace batchd::daemon::remote
