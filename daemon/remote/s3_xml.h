// s3_xml.h — the XML bodies S3 answers with: a ListObjectsV2 page and an error (<Error><Code>..<Message>..).
// Parsed with Boost.PropertyTree's read_xml; elements matched by local name, in any order (S3's namespace is
// http://s3.amazonaws.com/doc/2006-03-01/, some S3-compatible servers use another: it is not checked).
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon::remote {

struct ListedKey {
  std::string key;  // decoded when the page says <EncodingType>url</EncodingType> (as botocore: '+' is a space)
  uint64_t size = 0;
  std::string etag;  // quotes included, as S3 sends it
};

struct ListPage {
  std::vector<ListedKey> keys;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken, "" when not truncated
};

// kDataError naming `shown_url` for a body that is not a ListBucketResult, a Size that is not a number, or a
// truncated page without a NextContinuationToken.
Result<ListPage> parse_list_page(const std::string& xml, const std::string& shown_url);

// "SlowDown: Please reduce your request rate." from an S3 error body; "" if the body is not one. Only Code and
// Message are read: other elements (a SignatureDoesNotMatch's CanonicalRequest) can hold a session token.
std::string s3_error_summary(const std::string& xml);

}  // namespace batchd::daemon::remote
