// s3_request.h — what an S3 request looks like on the wire: its URL (path-style, in SigV4's canonical form) and its
// signature, made by libcurl (CURLOPT_AWS_SIGV4).
//
// Why the URL is built in canonical form: curl 7.88's signer (lib/http_aws_sigv4.c, read at tag curl-7_88_1) signs
// the path and the query exactly as they appear in the URL it sends (no re-encoding, no sorting), the host, every
// header of CURLOPT_HTTPHEADER and x-amz-date, and takes the payload hash from an x-amz-content-sha256 header when
// there is one. So the URL is made canonical here: the key URI-encoded as AWS's UriEncode (A-Za-z0-9 -_.~ kept, '/'
// kept in the path, every other byte %XX upper-case: spaces, '+', UTF-8 alike); query parameters sorted by name,
// names and values encoded the same way with '/' encoded too. What S3 then computes from the request it receives is
// what curl signed. Headers: x-amz-content-sha256 is the SHA-256 of the empty payload (GET and HEAD send none),
// as botocore's S3SigV4Auth sends for requests without a body; x-amz-security-token carries a session token (and
// is signed, as S3 requires). Other headers a request adds (If-Match) are signed too. With these, curl 7.88 signs
// every request batchd sends (HEAD, GET of any key, ListObjectsV2 with prefix and continuation token):
// tests/unit/daemon/remote/sigv4_test.cc compares each with botocore's signature (tests/remote/sigv4_expected.py).
// Pure functions, apart from sign_s3_request setting options on a handle.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "batchd/result.h"
#include "remote/aws_settings.h"
#include "remote/curl_handle.h"

namespace batchd::daemon::remote {

// AWS's UriEncode (Signature Version 4, "Create a canonical request"): bytes outside A-Za-z0-9 -_.~ as %XX
// (upper-case hex); '/' kept when keep_slash (an object key in a path), encoded otherwise (a query value).
std::string aws_uri_encode(std::string_view text, bool keep_slash);

// "a=1&b=x%2Fy": each name and value aws_uri_encode'd (no '/' kept), sorted by encoded name then value.
std::string canonical_query(std::vector<std::pair<std::string, std::string>> params);

// ENDPOINT/BUCKET/KEY, the key encoded (path-style addressing).
std::string s3_object_url(const AwsSettings& s3, const std::string& bucket, const std::string& key);

// ENDPOINT/BUCKET?continuation-token=T&encoding-type=url&list-type=2&max-keys=N&prefix=P (T omitted when empty).
std::string s3_list_url(const AwsSettings& s3, const std::string& bucket, const std::string& prefix,
                        const std::string& continuation_token, uint32_t max_keys);

// Sets `easy` to sign its next request with SigV4 for s3.credentials (CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3",
// CURLOPT_USERNAME/PASSWORD) and adds x-amz-content-sha256 (and x-amz-security-token) to `headers`; without
// credentials it adds nothing (an anonymous request). kResourceExhausted if libcurl cannot allocate.
Status sign_s3_request(CURL* easy, const AwsSettings& s3, CurlHeaders* headers);

}  // namespace batchd::daemon::remote
