// transfer_verdict.h — what one attempt's HttpResponse means: done, worth another attempt (and why, in words), or
// an error at once. The policy of remote/object_store.h's "Faults" paragraph, in one place.
//
// Retried: curl's connect/resolve failures, timeouts (a stall included), resets, an empty reply, a transfer cut short
// (CURLE_PARTIAL_FILE), a TLS handshake cut off; HTTP 5xx, 429 and 408. At once: 404 kNotFound, 401/403
// kPermissionDenied, 412 kDataError (If-Match failed: the object changed), other statuses kInvalidArgument; an ETag
// other than the expected one kDataError; a body past its bound kDataError; a failed write kIo; a certificate the
// CA bundle does not verify kUnavailable naming the CA setting; any other curl error kUnavailable.
// Messages name `what` (the method and the URL as shown: redacted, s3:// with its endpoint) and the status with S3's
// error Code and Message, or curl's error text; never a header, a credential or a query string.
// Pure; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "batchd/result.h"
#include "remote/http_transfer.h"

namespace batchd::daemon::remote {

struct Verdict {
  enum Kind { kDone, kRetry, kFail } kind = kDone;
  std::string reason;          // kRetry: "HTTP 503 (SlowDown: ...)", "curl error 56 (...)"
  std::optional<Error> error;  // kFail
};

// `credentials_hint`: where the credentials came from (AwsSettings::describe()), named by 401/403 errors.
Verdict judge_response(const HttpResponse& r, const std::string& what, const std::string& credentials_hint);

// "HTTP 503 (SlowDown: Please reduce your request rate.)" or "HTTP 404".
std::string http_status_text(const HttpResponse& r);

}  // namespace batchd::daemon::remote
