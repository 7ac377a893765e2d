#include "remote/s3_request.h"

#include <algorithm>

namespace batchd::daemon::remote {
namespace {

// SHA-256 of the empty string: the payload hash of a request without a body (botocore's EMPTY_SHA256_HASH).
constexpr const char* kEmptyPayloadSha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

}  // namespace

std::string aws_uri_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() * 3);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                            c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

std::string canonical_query(std::vector<std::pair<std::string, std::string>> params) {
  for (auto& [name, value] : params) {
    name = aws_uri_encode(name, false);
    value = aws_uri_encode(value, false);
  }
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

std::string s3_object_url(const AwsSettings& s3, const std::string& bucket, const std::string& key) {
  return s3.endpoint_url + "/" + bucket + "/" + aws_uri_encode(key, true);
}

std::string s3_list_url(const AwsSettings& s3, const std::string& bucket, const std::string& prefix,
                        const std::string& continuation_token, uint32_t max_keys) {
  std::vector<std::pair<std::string, std::string>> params = {
      {"list-type", "2"}, {"prefix", prefix}, {"max-keys", std::to_string(max_keys)}, {"encoding-type", "url"}};
  if (!continuation_token.empty()) params.emplace_back("continuation-token", continuation_token);
  return s3.endpoint_url + "/" + bucket + "?" + canonical_query(std::move(params));
}

Status sign_s3_request(CURL* easy, const AwsSettings& s3, CurlHeaders* headers) {
  if (s3.credentials.empty()) return ok_status();
  const std::string sigv4 = "aws:amz:" + s3.region + ":s3";
  bool ok = curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, sigv4.c_str()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_USERNAME, s3.credentials.access_key_id.c_str()) == CURLE_OK &&
            curl_easy_setopt(easy, CURLOPT_PASSWORD, s3.credentials.secret_access_key.c_str()) == CURLE_OK &&
            headers->add(std::string("x-amz-content-sha256: ") + kEmptyPayloadSha256);
  if (ok && !s3.credentials.session_token.empty()) {
    ok = headers->add("x-amz-security-token: " + s3.credentials.session_token);
  }
  if (!ok) return Error(ErrorCode::kResourceExhausted, "libcurl could not set up the request's SigV4 signature");
  return ok_status();
}

}  // namespace batchd::daemon::remote
