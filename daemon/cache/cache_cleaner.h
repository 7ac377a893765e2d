// cache_cleaner.h — runs the sample cache's cleaner (SampleCache::clean: churn credited back to its uids, segments
// freed by evicting the few live entries of the emptiest ones, the memfd's memory held within cache.max_bytes) on the
// daemon's event loop: every kIdle, and every kBusy while a pass over the index is under way (each call scans at most
// kCleanSlots slots, a few milliseconds). Lives from after the cache is made until the event loop ends; a null cache
// (cache.max_bytes = 0) arms nothing. Not thread-safe: the daemon's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "cache/sample_cache.h"

namespace batchd::daemon {

class CacheCleaner final {
 public:
  static constexpr std::chrono::milliseconds kIdle{1000};
  static constexpr std::chrono::milliseconds kBusy{20};

  CacheCleaner(boost::asio::io_context& io, SampleCache* cache) : timer_(io), cache_(cache) { arm(kIdle); }
  CacheCleaner(const CacheCleaner&) = delete;
  CacheCleaner& operator=(const CacheCleaner&) = delete;
  // The daemon drains: nothing may keep its event loop alive.
  void cancel() {
    cache_ = nullptr;
    timer_.cancel();
  }

 private:
  void arm(std::chrono::milliseconds after);

  boost::asio::steady_timer timer_;
  SampleCache* cache_;
};

}  // namespace batchd::daemon
