// http_transfer.h — one HTTP(S) request through libcurl, its body written to a file or kept in memory, and what
// happened (status, curl error, ETag, bytes), without any judgement: retries and errors are object_store.cc's.
//
// Every transfer is bounded (HttpSettings): CURLOPT_CONNECTTIMEOUT_MS; CURLOPT_LOW_SPEED_LIMIT 1 byte/s for
// CURLOPT_LOW_SPEED_TIME = stall_timeout_s rounded up to whole seconds (curl's unit; at least 1), which also bounds
// a server that accepts and never answers; CURLOPT_TIMEOUT_MS = request_timeout_s when non-zero
// (or the request's own timeout_s when smaller: what is left of a listing's time). Only http and https
// (CURLOPT_PROTOCOLS_STR, redirects too); no signals (CURLOPT_NOSIGNAL); no content decoding (the bytes as stored);
// the path sent as given (CURLOPT_PATH_AS_IS: "a/../b" is an S3 key, not a path to normalize). ca_file ->
// CURLOPT_CAINFO. The handle is reset (curl_easy_reset) before each request and keeps its connections, so requests
// to one server reuse a connection. Thread-compatible (one HttpClient per thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "batchd/result.h"
#include "remote/aws_settings.h"
#include "remote/curl_handle.h"
#include "remote/object_store.h"

namespace batchd::daemon::remote {

struct HttpRequest {
  std::string url;                   // what is sent (an s3 request's URL already canonical: s3_request.h)
  bool head = false;                 // HEAD (no body) instead of GET
  std::vector<std::string> headers;  // extra header lines ("If-Match: \"...\"")
  const AwsSettings* sign = nullptr;  // SigV4 with these credentials (s3 requests; null: unsigned)
  bool follow_redirects = false;     // http(s) URLs only (a signed request must not be sent elsewhere)
  double timeout_s = 0;              // > 0: the whole request within this (and request_timeout_s when non-zero)
};

// Where a 2xx body goes (any other status's body is kept, first 64 KiB, in HttpResponse::error_body).
struct BodySink {
  int fd = -1;                 // >= 0: written here with pwrite from offset 0; else kept in HttpResponse::body
  uint64_t max_bytes = 0;      // a body (or a Content-Length) past this is cut off: too_long
  std::string expect_etag;     // non-empty: a 2xx answer with another (non-empty) ETag is stopped: etag_changed
};

struct HttpResponse {
  CURLcode curl = CURLE_OK;
  std::string curl_error;                 // CURLOPT_ERRORBUFFER, else curl_easy_strerror
  long status = 0;                        // the final response's HTTP status (0: none arrived)
  std::string etag;                       // the final response's ETag header, as sent
  std::optional<uint64_t> content_length;  // the final response's Content-Length
  uint64_t body_bytes = 0;                // 2xx body bytes received (and written)
  std::string body;                       // the 2xx body when BodySink::fd < 0
  std::string error_body;                 // a non-2xx body, first 64 KiB
  int write_errno = 0;                    // the fd write failed with this errno (the transfer was stopped)
  bool too_long = false;
  bool etag_changed = false;
  std::string expected_etag;              // etag_changed: the ETag the sink expected
};

class HttpClient final {
 public:
  explicit HttpClient(HttpSettings settings);
  // One request. An error only for a failure to set it up (no handle, an allocation); what the server or the
  // network did is in HttpResponse.
  Result<HttpResponse> perform(const HttpRequest& request, const BodySink& sink);
  // A transfer under way stops (CURLE_ABORTED_BY_CALLBACK) soon after *cancel becomes true: curl's progress
  // callback looks at it at least once a second. null: never.
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }

 private:
  HttpSettings settings_;
  const std::atomic<bool>* cancel_ = nullptr;
  CurlEasy easy_;
};

}  // namespace batchd::daemon::remote
