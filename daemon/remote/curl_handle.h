// curl_handle.h — owners of libcurl's resources: an easy handle (CURL*), a header list (curl_slist*) and a parsed URL
// (CURLU*), each freed on destruction; and curl_global_init, done once per process (std::call_once) before any of
// them is made.
//
// An easy handle keeps its connections (and TLS sessions, DNS cache) across curl_easy_reset, so one CurlEasy reused
// for many requests reuses connections to a server. A handle is used by one thread at a time (libcurl's rule).
// Construction never fails: an allocation failure leaves get() null, which callers turn into an error.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>

namespace batchd::daemon::remote {

// curl_global_init(CURL_GLOBAL_DEFAULT) once per process; true if it succeeded. Called by the constructors below.
bool curl_global_once();

struct CurlEasyDeleter {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct CurlSlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
struct CurlUrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};

class CurlEasy final {
 public:
  CurlEasy();
  CURL* get() const { return h_.get(); }

 private:
  std::unique_ptr<CURL, CurlEasyDeleter> h_;
};

// A request's extra headers (CURLOPT_HTTPHEADER). The list must outlive the transfer that uses it.
class CurlHeaders final {
 public:
  // false on an allocation failure (the list is then incomplete: do not send it).
  bool add(const std::string& line);
  curl_slist* get() const { return list_.get(); }

 private:
  std::unique_ptr<curl_slist, CurlSlistDeleter> list_;
};

class CurlUrl final {
 public:
  CurlUrl();
  CURLU* get() const { return u_.get(); }
  // A part (CURLUPART_HOST, ...) of the parsed URL, "" if it has none.
  std::string part(CURLUPart which) const;

 private:
  std::unique_ptr<CURLU, CurlUrlDeleter> u_;
};

}  // namespace batchd::daemon::remote
