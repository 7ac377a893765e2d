#include "cache/cache_cleaner.h"

#include <spdlog/spdlog.h>

namespace batchd::daemon {

void CacheCleaner::arm(std::chrono::milliseconds after) {
  if (cache_ == nullptr) return;
  timer_.expires_after(after);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // the daemon is stopping
    if (const uint64_t evicted = cache_->clean(std::chrono::steady_clock::now()); evicted > 0) {
      spdlog::debug("sample cache: the cleaner evicted {} bytes to free segments", evicted);
    }
    arm(cache_->cleaning() ? kBusy : kIdle);
  });
}

}  // namespace batchd::daemon
