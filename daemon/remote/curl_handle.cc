#include "remote/curl_handle.h"

#include <mutex>

namespace batchd::daemon::remote {

bool curl_global_once() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] { ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; });
  return ok;
}

CurlEasy::CurlEasy() {
  if (curl_global_once()) h_.reset(curl_easy_init());
}

bool CurlHeaders::add(const std::string& line) {
  curl_slist* grown = curl_slist_append(list_.get(), line.c_str());
  if (grown == nullptr) return false;
  (void)list_.release();  // curl_slist_append returned the same list, grown by one
  list_.reset(grown);
  return true;
}

CurlUrl::CurlUrl() {
  if (curl_global_once()) u_.reset(curl_url());
}

std::string CurlUrl::part(CURLUPart which) const {
  char* text = nullptr;
  if (u_ == nullptr || curl_url_get(u_.get(), which, &text, 0) != CURLUE_OK || text == nullptr) return "";
  std::string out(text);
  curl_free(text);
  return out;
}

}  // namespace batchd::daemon::remote
