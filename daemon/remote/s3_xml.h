// s3_xml.h — the XML bodies S3 answers with: a ListObjectsV2 page and an error (<Error><Code>..<Message>..).
// Parsed with Boost.PropertyTree's read_xml (RapidXML, which recurses once per element level), after a scan without
// recursion has checked the bounds below: an answer nested deeper, or longer, is refused unparsed. Elements are
// matched by local name, in any order (S3's namespace is http://s3.amazonaws.com/doc/2006-03-01/, some
// S3-compatible servers use another: it is not checked).
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon::remote {

// The bounds of an answer, checked before it is parsed (Boost.PropertyTree's parser recurses once per element level,
// so an unbounded depth would overflow the stack): ListObjectsV2 and errors nest 4 levels at most.
inline constexpr size_t kMaxS3XmlDepth = 32;               // element levels, the root's included
inline constexpr size_t kMaxS3XmlBytes = size_t{8} << 20;  // 1000 keys of 1024 bytes URL-encoded: under 4 MiB

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

// kDataError naming `shown_url` for a body past the bounds above (not parsed at all), one that is not a
// ListBucketResult, a Size that is not a number, or a truncated page without a NextContinuationToken. A key in an
// error is escaped (wire/printable.h): it is the server's text.
Result<ListPage> parse_list_page(const std::string& xml, const std::string& shown_url);

// "SlowDown: Please reduce your request rate." from an S3 error body; "" if the body is not one (or is past the
// bounds). Only Code and Message are read: other elements (a SignatureDoesNotMatch's CanonicalRequest) can hold a
// session token. Both escaped (wire/printable.h) and cut (128 and 512 bytes): they go into errors as they are.
std::string s3_error_summary(const std::string& xml);

}  // namespace batchd::daemon::remote
