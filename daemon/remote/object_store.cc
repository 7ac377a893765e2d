#include "remote/object_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <thread>

#include "remote/http_transfer.h"
#include "remote/s3_request.h"
#include "remote/s3_xml.h"
#include "remote/transfer_verdict.h"

namespace batchd::daemon::remote {
namespace {

using Clock = std::chrono::steady_clock;

// A request and how errors name it.
struct Target {
  RemoteUrl url;
  HttpRequest request;
  std::string what;  // "GET s3://b/k (endpoint http://...)", "HEAD https://h/x?..."
  // A listing's bounds: no attempt starts after `deadline` (nor runs past it): late_error instead; a body cut off
  // at BodySink::max_bytes is too_long_error (when set) instead of the object's "changed on the server".
  std::optional<Clock::time_point> deadline;
  std::string late_error, too_long_error;
};

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

struct ObjectStore::Impl {
  Impl(HttpSettings h, AwsSettings a) : http(h), s3(std::move(a)), client(std::move(h)), rng(std::random_device{}()) {}

  Result<Target> target(const std::string& url, bool head) const {
    auto parsed = parse_remote_url(url, "remote URL");
    if (!parsed.ok()) return parsed.error();
    Target t;
    t.url = *parsed;
    t.request.head = head;
    const std::string method = head ? "HEAD " : "GET ";
    if (t.url.scheme == Scheme::kS3) {
      t.request.url = s3_object_url(s3, t.url.bucket, t.url.key);
      t.request.sign = s3.credentials.empty() ? nullptr : &s3;
      t.what = method + redact(t.url.url) + " (endpoint " + redact(s3.endpoint_url) + ")";
    } else {
      t.request.url = url;
      t.request.follow_redirects = true;
      t.what = method + redact(url);
    }
    return t;
  }

  // AWS's "full jitter": uniform(0, min(cap, base * 2^attempt)).
  void back_off(uint32_t attempt) {
    const double cap = std::min(http.backoff_max_s, http.backoff_base_s * std::pow(2.0, attempt));
    const double s = std::uniform_real_distribution<double>(0, std::max(0.0, cap))(rng);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
    while (!cancelled() && std::chrono::steady_clock::now() < until) {  // in slices: a cancel is seen within 50 ms
      std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(until - std::chrono::steady_clock::now(),
                                                                          std::chrono::milliseconds(50)));
    }
  }
  bool cancelled() const { return cancel != nullptr && cancel->load(); }

  // Attempts `t` until a verdict other than retry, or the bound. `before` runs before each attempt (truncating the
  // file); `check` judges a 2xx response further (a fetch's byte count).
  template <typename Before, typename Check>
  Result<HttpResponse> attempt_all(TransferCounters& counters, const Target& t, const BodySink& sink, Before before,
                                   Check check) {
    const uint32_t attempts = http.retries + 1;
    std::string last;
    for (uint32_t i = 0; i < attempts; ++i) {
      if (i > 0) {
        ++counters.retries;
        back_off(i - 1);
      }
      if (cancelled()) return Error(ErrorCode::kUnavailable, t.what + ": cancelled (the daemon is stopping)");
      HttpRequest request = t.request;
      if (t.deadline) {
        const double left = std::chrono::duration<double>(*t.deadline - Clock::now()).count();
        if (left <= 0) return Error(ErrorCode::kResourceExhausted, t.late_error);
        request.timeout_s = left;
      }
      BATCHD_RETURN_IF_ERROR(before());
      ++counters.requests;
      auto r = client.perform(request, sink);
      if (!r.ok()) return r.error();
      if (cancelled()) return Error(ErrorCode::kUnavailable, t.what + ": cancelled (the daemon is stopping)");
      counters.bytes += r->body_bytes + r->error_body.size();
      if (r->too_long && !t.too_long_error.empty()) return Error(ErrorCode::kResourceExhausted, t.too_long_error);
      Verdict v = judge_response(*r, t.what, s3.describe());
      if (v.kind == Verdict::kDone) v = check(*r);
      if (v.kind == Verdict::kDone) return r;
      if (v.kind == Verdict::kFail) return *v.error;
      last = v.reason;
    }
    if (t.deadline && Clock::now() >= *t.deadline) return Error(ErrorCode::kResourceExhausted, t.late_error);
    return Error(ErrorCode::kUnavailable, t.what + ": " + last + ", " + std::to_string(attempts) + " attempts in all " +
                                              "(retries with backoff): check that the server is up and reachable, " +
                                              "or raise the retries and timeouts ([remote]) for a slow one");
  }

  HttpSettings http;
  AwsSettings s3;
  HttpClient client;
  std::mt19937_64 rng;
  const std::atomic<bool>* cancel = nullptr;
};

void ObjectStore::set_cancel(const std::atomic<bool>* cancel) {
  impl_->cancel = cancel;
  impl_->client.set_cancel(cancel);
}

ObjectStore::ObjectStore(HttpSettings http, AwsSettings s3)
    : impl_(std::make_unique<Impl>(std::move(http), std::move(s3))) {}
ObjectStore::~ObjectStore() = default;
ObjectStore::ObjectStore(ObjectStore&&) noexcept = default;
ObjectStore& ObjectStore::operator=(ObjectStore&&) noexcept = default;

static Status nothing() { return ok_status(); }

Result<RemoteObject> ObjectStore::stat(const std::string& url) {
  auto t = impl_->target(url, true);
  if (!t.ok()) return t.error();
  BodySink sink;
  auto r = impl_->attempt_all(counters_, *t, sink, nothing, [](const HttpResponse&) { return Verdict{}; });
  if (!r.ok()) {
    ++counters_.failures;
    return r.error();
  }
  if (!r->content_length) {
    ++counters_.failures;
    return Error(ErrorCode::kDataError, t->what + ": the answer has no Content-Length, so the object's size is " +
                                            "unknown: serve it with one");
  }
  return RemoteObject{url, *r->content_length, r->etag};
}

Result<std::vector<RemoteObject>> ObjectStore::list(const std::string& s3_prefix_url, size_t max_objects) {
  auto parsed = parse_remote_url(s3_prefix_url, "remote URL");
  if (!parsed.ok()) return parsed.error();
  const std::string shown = redact(s3_prefix_url);
  if (parsed->scheme != Scheme::kS3) {
    return Error(ErrorCode::kInvalidArgument, shown + ": HTTP has no listing: name each shard " +
                                                  "(braces {000..099}) or use s3://");
  }
  const HttpSettings& http = impl_->http;
  const std::string prefix = parsed->is_pattern ? parsed->list_prefix : parsed->key;
  const std::string narrow = ": narrow the prefix or pattern (s3://BUCKET/PREFIX/*.tar lists PREFIX/ alone), or " +
                             std::string("check that the endpoint is an S3 server");
  const uint32_t max_pages = std::max(1u, http.list_max_pages);
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(http.list_timeout_s));
  auto fail = [&](ErrorCode code, const std::string& text) -> Error {
    ++counters_.failures;
    return Error(code, text);
  };
  std::vector<RemoteObject> out;
  std::string token;
  for (uint32_t pages = 1;; ++pages) {
    Target t;
    t.url = *parsed;
    t.what = "GET " + shown + " (ListObjectsV2, endpoint " + redact(impl_->s3.endpoint_url) + ")";
    t.request.url = s3_list_url(impl_->s3, parsed->bucket, prefix, token, std::max(1u, http.list_page_size));
    t.request.sign = impl_->s3.credentials.empty() ? nullptr : &impl_->s3;
    t.deadline = deadline;
    t.late_error = "the listing of " + shown + " took more than " + seconds(http.list_timeout_s) + " s (" +
                   std::to_string(pages - 1) + " pages, " + std::to_string(out.size()) + " keys)" + narrow;
    t.too_long_error = "the listing of " + shown + " sent a page of more than " +
                       std::to_string(kMaxS3XmlBytes >> 20) + " MiB (1000 keys take under 4 MiB): refused " +
                       "unparsed; check that the endpoint is an S3 server";
    BodySink sink;
    sink.max_bytes = kMaxS3XmlBytes;
    auto r = impl_->attempt_all(counters_, t, sink, nothing, [](const HttpResponse&) { return Verdict{}; });
    auto page = r.ok() ? parse_list_page(r->body, shown) : Result<ListPage>(r.error());
    if (!page.ok()) return fail(page.error().code(), page.error().message());
    for (const ListedKey& k : page->keys) {
      out.push_back({"s3://" + parsed->bucket + "/" + k.key, k.size, k.etag});
    }
    if (out.size() > max_objects) {
      return fail(ErrorCode::kInvalidArgument, shown + " lists more than " + std::to_string(max_objects) +
                                                   " objects: narrow the prefix or pattern");
    }
    if (!page->truncated) break;
    if (page->next_token == token) {
      return fail(ErrorCode::kDataError, "the listing of " + shown + " does not move on (the same continuation " +
                                             "token twice): is the endpoint an S3 server?");
    }
    if (pages >= max_pages) {
      return fail(ErrorCode::kResourceExhausted, "the listing of " + shown + " needs more than " +
                                                     std::to_string(max_pages) + " pages (ListObjectsV2 answers; " +
                                                     std::to_string(out.size()) + " keys so far)" + narrow);
    }
    token = page->next_token;
  }
  std::sort(out.begin(), out.end(), [](const RemoteObject& a, const RemoteObject& b) { return a.url < b.url; });
  return out;
}

Status ObjectStore::fetch(const RemoteObject& object, int fd) {
  auto t = impl_->target(object.url, false);
  if (!t.ok()) return t.error();
  if (!object.etag.empty()) t->request.headers.push_back("If-Match: " + object.etag);
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  BodySink sink;
  sink.fd = fd;
  sink.max_bytes = object.size;
  sink.expect_etag = object.etag;
  auto truncate = [&]() -> Status {
    if (regular && ::ftruncate(fd, 0) != 0) {
      return Error(ErrorCode::kIo, t->what + ": truncating the file: " + std::strerror(errno));
    }
    return ok_status();
  };
  auto complete = [&](const HttpResponse& r) -> Verdict {
    if (r.content_length && *r.content_length < object.size) {
      return {Verdict::kFail, "", Error(ErrorCode::kDataError,
                                        t->what + " changed on the server (size " + std::to_string(object.size) +
                                            ", now " + std::to_string(*r.content_length) + "): reload the dataset")};
    }
    if (r.body_bytes < object.size) {
      return {Verdict::kRetry, "the body ended after " + std::to_string(r.body_bytes) + " of " +
                                   std::to_string(object.size) + " bytes", std::nullopt};
    }
    return {};
  };
  auto r = impl_->attempt_all(counters_, *t, sink, truncate, complete);
  if (r.ok()) return ok_status();
  ++counters_.failures;
  return r.error();
}

}  // namespace batchd::daemon::remote
