#include "remote/transfer_verdict.h"

#include <cstring>

#include "batchd/wire/printable.h"
#include "remote/s3_xml.h"

namespace batchd::daemon::remote {
namespace {

Verdict fail(ErrorCode code, const std::string& text) { return {Verdict::kFail, "", Error(code, text)}; }
Verdict retry(const std::string& reason) { return {Verdict::kRetry, reason, std::nullopt}; }

bool retryable(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_CONNECT: case CURLE_PARTIAL_FILE:
    case CURLE_OPERATION_TIMEDOUT: case CURLE_SSL_CONNECT_ERROR: case CURLE_GOT_NOTHING: case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR: case CURLE_HTTP2: case CURLE_HTTP2_STREAM: case CURLE_WEIRD_SERVER_REPLY:
      return true;
    default:
      return false;
  }
}

std::string curl_text(const HttpResponse& r) {
  return "curl error " + std::to_string(static_cast<int>(r.curl)) + " (" + wire::printable(r.curl_error) + ")";
}

Verdict judge_curl_error(const HttpResponse& r, const std::string& what) {
  if (r.etag_changed) {
    return fail(ErrorCode::kDataError, what + ": the object changed on the server (ETag " +
                                           wire::printable(r.expected_etag) + ", now " + wire::printable(r.etag) +
                                           "): reload the dataset");
  }
  if (r.too_long) {
    return fail(ErrorCode::kDataError, what + ": the server sent more bytes than the object's size (Content-Length " +
                                           (r.content_length ? std::to_string(*r.content_length) : "absent") +
                                           "): refused; the object changed on the server, reload the dataset");
  }
  if (r.write_errno != 0) {
    return fail(ErrorCode::kIo, what + ": writing the body failed: " + std::strerror(r.write_errno));
  }
  if (r.curl == CURLE_PEER_FAILED_VERIFICATION || r.curl == CURLE_SSL_CACERT_BADFILE) {
    return fail(ErrorCode::kUnavailable, what + ": the server's TLS certificate is not trusted (" + curl_text(r) +
                                             "): set the CA bundle that signed it (remote ca_file), or fix the "
                                             "server's certificate");
  }
  if (r.curl == CURLE_UNSUPPORTED_PROTOCOL || r.curl == CURLE_URL_MALFORMAT) {
    return fail(ErrorCode::kInvalidArgument, what + ": " + curl_text(r) + ": fix the URL");
  }
  if (retryable(r.curl)) return retry(curl_text(r));
  return fail(ErrorCode::kUnavailable, what + ": " + curl_text(r));
}

}  // namespace

std::string http_status_text(const HttpResponse& r) {
  const std::string summary = s3_error_summary(r.error_body);
  return "HTTP " + std::to_string(r.status) + (summary.empty() ? "" : " (" + summary + ")");
}

Verdict judge_response(const HttpResponse& r, const std::string& what, const std::string& credentials_hint) {
  if (r.curl != CURLE_OK) return judge_curl_error(r, what);
  const long s = r.status;
  if (s >= 200 && s < 300) return {};
  const std::string status = http_status_text(r);
  if (s >= 500 || s == 429 || s == 408) return retry(status);
  if (s == 404) return fail(ErrorCode::kNotFound, what + ": " + status + ": no such object; check the URL (bucket, " +
                                                      "key or path) and the endpoint");
  if (s == 401 || s == 403) {
    const std::string from = credentials_hint.empty() ? "" : " (" + credentials_hint + ")";
    return fail(ErrorCode::kPermissionDenied,
                what + ": " + status + ": access denied; check the credentials" + from + " and what they may read");
  }
  if (s == 412) {
    return fail(ErrorCode::kDataError, what + ": " + status + ": the object changed on the server since it was " +
                                           "listed (its ETag is no longer the one expected): reload the dataset");
  }
  if (s >= 300 && s < 400) {
    return fail(ErrorCode::kInvalidArgument, what + ": " + status + ": redirected; for S3, set the bucket's region " +
                                                 "(AWS_REGION) or its endpoint");
  }
  return fail(ErrorCode::kInvalidArgument, what + ": " + status);
}

}  // namespace batchd::daemon::remote
