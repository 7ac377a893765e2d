#include "remote/http_transfer.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>

#include "remote/s3_request.h"

namespace batchd::daemon::remote {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

// One transfer's state, shared by curl's callbacks.
struct Transfer {
  CURL* easy;
  const BodySink* sink;
  HttpResponse* out;
  bool body_started = false;  // the first body byte of the final response arrived (status known)
  bool success = false;       // the final response is 2xx
};

std::string trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r' || v.back() == '\n')) v.remove_suffix(1);
  return std::string(v);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string_view line(data, size * n);
  if (line.substr(0, 5) == "HTTP/") {  // a new response (after a redirect or a 100): forget the previous one's
    t->out->etag.clear();
    t->out->content_length.reset();
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  const std::string name(line.substr(0, colon));
  const std::string value = trimmed(line.substr(colon + 1));
  if (strcasecmp(name.c_str(), "ETag") == 0) {
    t->out->etag = value;
  } else if (strcasecmp(name.c_str(), "Content-Length") == 0) {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec == std::errc() && end == value.data() + value.size()) t->out->content_length = v;
  }
  return size * n;
}

// The first byte of a body: is the response a success, and is it the one expected?
bool start_body(Transfer* t) {
  t->body_started = true;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->out->status);
  t->success = t->out->status >= 200 && t->out->status < 300;
  if (!t->success) return true;
  const BodySink& sink = *t->sink;
  if (!sink.expect_etag.empty() && !t->out->etag.empty() && t->out->etag != sink.expect_etag) {
    t->out->etag_changed = true;
    t->out->expected_etag = sink.expect_etag;
    return false;
  }
  if (t->out->content_length && *t->out->content_length > sink.max_bytes) {
    t->out->too_long = true;
    return false;
  }
  return true;
}

bool write_all(int fd, const char* data, size_t len, uint64_t offset, int* err) {
  while (len > 0) {
    const ssize_t w = ::pwrite(fd, data, len, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *err = w < 0 ? errno : EIO;
      return false;
    }
    data += w;
    len -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return true;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (!t->body_started && !start_body(t)) return 0;  // 0 (!= len) stops the transfer: CURLE_WRITE_ERROR
  HttpResponse& out = *t->out;
  if (!t->success) {
    out.error_body.append(data, std::min(len, kMaxErrorBody - std::min(kMaxErrorBody, out.error_body.size())));
    return len;
  }
  if (out.body_bytes + len > t->sink->max_bytes) {
    out.too_long = true;
    return 0;
  }
  if (t->sink->fd >= 0) {
    if (!write_all(t->sink->fd, data, len, out.body_bytes, &out.write_errno)) return 0;
  } else {
    out.body.append(data, len);
  }
  out.body_bytes += len;
  return len;
}

}  // namespace

HttpClient::HttpClient(HttpSettings settings) : settings_(std::move(settings)) {}

Result<HttpResponse> HttpClient::perform(const HttpRequest& request, const BodySink& sink) {
  CURL* h = easy_.get();
  if (h == nullptr) return Error(ErrorCode::kResourceExhausted, "libcurl could not make an easy handle");
  curl_easy_reset(h);
  HttpResponse out;
  Transfer t{h, &sink, &out};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  CurlHeaders headers;
  for (const std::string& line : request.headers) {
    if (!headers.add(line)) return Error(ErrorCode::kResourceExhausted, "libcurl could not allocate a header");
  }
  if (request.sign != nullptr) BATCHD_RETURN_IF_ERROR(sign_s3_request(h, *request.sign, &headers));
  const long stall_s = std::max(1L, static_cast<long>(std::ceil(settings_.stall_timeout_s)));
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  if (cancel_ != nullptr) {
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, +[](void* flag, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
      return static_cast<const std::atomic<bool>*>(flag)->load() ? 1 : 0;
    });
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel_));
  }
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(settings_.connect_timeout_s * 1000));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
  double timeout_s = settings_.request_timeout_s;
  if (request.timeout_s > 0) timeout_s = timeout_s > 0 ? std::min(timeout_s, request.timeout_s) : request.timeout_s;
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_s > 0 ? std::max(1L, static_cast<long>(timeout_s * 1000)) : 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "batchd/" BATCHD_VERSION);
  curl_easy_setopt(h, CURLOPT_NOBODY, request.head ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  if (!settings_.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, settings_.ca_file.c_str());
  out.curl = curl_easy_perform(h);
  if (!t.body_started) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out.status);
  if (out.curl != CURLE_OK) out.curl_error = error_buffer[0] != 0 ? error_buffer : curl_easy_strerror(out.curl);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);  // error_buffer and headers end here
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  // A 2xx answer without a body byte (an empty object, a HEAD) is checked here as at the first byte.
  if (out.curl == CURLE_OK && !t.body_started && out.status >= 200 && out.status < 300 && !request.head) {
    (void)start_body(&t);
  }
  return out;
}

}  // namespace batchd::daemon::remote
