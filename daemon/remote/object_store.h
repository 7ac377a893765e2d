// object_store.h — objects of remote shards: s3:// (S3 and S3-compatible servers) and http(s):// URLs, over libcurl.
//
// The one door through which the daemon talks to object storage. `stat` (HEAD), `list` (S3 ListObjectsV2, paginated,
// sorted by key) and `fetch` (a whole object into a file). http(s):// URLs are fetched as they are; s3://BUCKET/KEY
// goes to the resolved endpoint (remote/aws_settings.h: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
// endpoint_url, else https://s3.REGION.amazonaws.com) with path-style addressing (ENDPOINT/BUCKET/KEY: what
// S3-compatible servers (MinIO, Ceph, moto) serve), signed with AWS Signature Version 4 when credentials were
// found (anonymous requests otherwise): by libcurl's CURLOPT_AWS_SIGV4 over URLs we make canonical, no signing code
// of ours (remote/s3_request.h says why that suffices with curl 7.88; sigv4_test.cc checks it against botocore).
//
// Faults: a connection refused/reset, a timeout, an HTTP 5xx (503 SlowDown included), a truncated body (fewer bytes
// than Content-Length or than the object's size) are retried up to HttpSettings::retries times with exponential
// backoff and full jitter (AWS's "Exponential Backoff And Jitter": sleep uniform(0, min(cap, base * 2^attempt))),
// then fail with kUnavailable naming the URL, the last HTTP status or curl error, and the attempts. 404 is kNotFound
// and 401/403 kPermissionDenied at once (no retry), each naming the URL and the fix (the key or the credentials).
// No transfer can hang: a connect timeout, and a transfer that moves fewer than 1 byte/s for stall_timeout_s is
// aborted (and retried), see HttpSettings and remote/http_transfer.h. A TLS certificate that ca_file (or the
// system's bundle) does not verify is kUnavailable at once, naming the CA setting. A redirect of an s3 request is
// kInvalidArgument (the bucket's region); http(s) URLs follow up to 5 redirects.
// Errors, logs and counters never hold a secret: no credential, no Authorization or X-Amz-Security-Token header, no
// query string of a presigned URL (a URL's query is shown as "?..."), no userinfo (a URL with user:password@ is
// refused by parse_remote_url).
//
// Thread-compatible: one ObjectStore per thread (it owns a curl easy handle, so connections to a server are reused
// between its requests). Stateless apart from the connection cache and the counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "batchd/result.h"
#include "remote/aws_settings.h"
#include "remote/remote_url.h"

namespace batchd::daemon::remote {

// An object as a HEAD or a listing described it.
struct RemoteObject {
  std::string url;   // the shard's URL as the dataset names it (s3://bucket/key or http(s)://...)
  uint64_t size = 0;  // bytes (Content-Length of a HEAD, Size of a listing)
  std::string etag;  // as the server sent it, quotes included ("" if it sent none)
};

// Network settings ([remote] keys of the daemon's config; defaults here).
struct HttpSettings {
  double connect_timeout_s = 10;     // CURLOPT_CONNECTTIMEOUT
  double stall_timeout_s = 30;       // a transfer below 1 byte/s for this long is aborted (CURLOPT_LOW_SPEED_*)
  double request_timeout_s = 600;    // one request, whole (CURLOPT_TIMEOUT); 0 = none (the stall bound still holds)
  uint32_t retries = 5;              // attempts after the first, for the retryable faults above
  double backoff_base_s = 0.1;       // backoff: uniform(0, min(backoff_max_s, backoff_base_s * 2^attempt))
  double backoff_max_s = 5;
  std::string ca_file;               // PEM bundle of CAs for https ("" = the system's); CURLOPT_CAINFO
  uint32_t list_page_size = 1000;    // ListObjectsV2 max-keys per page (S3's maximum and default: 1000)
  // Bounds of one listing (list()), each a kResourceExhausted naming the listing, the bound and the fix when passed:
  // pages (ListObjectsV2 requests: 10,000 pages hold 10M keys at 1000 a page, ten times the most shards a dataset
  // may name, with room for S3's pages that hold fewer keys) and the seconds the whole listing may take (retries
  // included). A page's bytes are bounded by kMaxS3XmlBytes (remote/s3_xml.h).
  uint32_t list_max_pages = 10000;
  double list_timeout_s = 600;
};

// Counters of one ObjectStore (summed by the caller across threads).
struct TransferCounters {
  uint64_t requests = 0, retries = 0, bytes = 0, failures = 0;
};

class ObjectStore final {
 public:
  // `s3` is used for s3:// URLs only (its credentials, region, endpoint). Never fails (curl's global init is done
  // once per process by the implementation).
  ObjectStore(HttpSettings http, AwsSettings s3);
  ~ObjectStore();
  ObjectStore(ObjectStore&&) noexcept;
  ObjectStore& operator=(ObjectStore&&) noexcept;

  // HEAD: the object's size and ETag. kNotFound (404), kPermissionDenied (401/403), kUnavailable (after retries),
  // kInvalidArgument (a URL parse_remote_url refuses), kDataError (no Content-Length).
  Result<RemoteObject> stat(const std::string& url);

  // Every object under s3://BUCKET/PREFIX (ListObjectsV2 with prefix=PREFIX, every page), sorted by key (byte order),
  // as s3://BUCKET/KEY URLs with their sizes and ETags. At most `max_objects` (kInvalidArgument past it).
  // A pattern URL (RemoteUrl::is_pattern, "s3://b/train/*.tar") lists its list_prefix ("train/"): the caller
  // matches the keys. kInvalidArgument for an http(s) URL (HTTP has no listing); kDataError for an answer that is
  // not ListObjectsV2's (or a continuation token that does not move on); kResourceExhausted past a bound of
  // HttpSettings (list_max_pages pages, list_timeout_s seconds in all: each request's own timeout is cut to what
  // is left) or a page longer than kMaxS3XmlBytes (cut off as it arrives, not retried); errors as stat() otherwise.
  Result<std::vector<RemoteObject>> list(const std::string& s3_prefix_url, size_t max_objects);

  // The whole of `object` into `fd` (a regular file opened for writing; truncated to 0 before each attempt; written
  // from offset 0 with pwrite/write). Succeeds only if exactly object.size bytes arrived and the server's ETag is
  // object.etag (when both are non-empty): a truncated body is retried as above; a body longer than object.size is
  // cut off and refused (kDataError) — it bounds what a server can make the daemon write — and so is a complete
  // answer whose Content-Length is smaller (the object changed; not retried). An ETag other than
  // object.etag (the object was replaced since it was listed/indexed; the request carries If-Match, a 412 means the
  // same) is kDataError "changed on the server (ETag A, now B)" naming the URL and the fix (reload the dataset), not
  // retried. A failed write (ENOSPC: a full disk) is kIo naming errno's text (the caller names the cache's key).
  // `fd` may also be something other than a regular file (then it is not truncated): /dev/full in the tests.
  Status fetch(const RemoteObject& object, int fd);

  // A transfer under way gives up (kUnavailable "cancelled") soon after *cancel becomes true (checked by curl's
  // progress callback, at least once a second); null: never. The flag must outlive the store's requests.
  void set_cancel(const std::atomic<bool>* cancel);

  const TransferCounters& counters() const { return counters_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  TransferCounters counters_;
};

}  // namespace batchd::daemon::remote
