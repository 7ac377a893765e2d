// shard_store.cc — the store's bookkeeping: shards, pins, demand, eviction and the order of fetches. The files and
// the transfers are in shard_fetch.cc, the counters for status in shard_store_status.cc.
#include "remote/shard_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include <xxhash.h>

namespace batchd::daemon::remote {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string file_name(const RemoteObject& object) {
  const std::string id = object.url + "\n" + object.etag + "\n" + std::to_string(object.size);
  const XXH128_hash_t h = XXH3_128bits(id.data(), id.size());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return std::string(hex) + ".tar";
}

}  // namespace

ShardStore::ShardStore(ShardStoreOptions options) : options_(std::move(options)) {}

void ShardStore::set_on_change(std::function<void()> on_change) {
  MutexLock lock(&mu_);
  on_change_ = std::move(on_change);
}

uint32_t ShardStore::add(const RemoteObject& object, std::shared_ptr<const AwsSettings> aws,
                         const std::string& dataset) {
  MutexLock lock(&mu_);
  const std::string name = file_name(object);
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    shards_[it->second].datasets.insert(dataset);
    shards_[it->second].aws = std::move(aws);  // the latest load's settings sign the next requests
    return it->second;
  }
  Shard s;
  s.object = object;
  s.aws = std::move(aws);
  s.file = options_.dir + "/" + name;
  s.datasets.insert(dataset);
  if (auto orphan = orphans_.find(name); orphan != orphans_.end()) {
    if (orphan->second == object.size) {
      s.state = State::kHere;  // its bytes were counted when the store was opened
    } else {
      ::unlink(s.file.c_str());  // not what its name says: never read
      bytes_ -= orphan->second;
    }
    orphans_.erase(orphan);
  }
  const auto id = static_cast<uint32_t>(shards_.size());
  shards_.push_back(std::move(s));
  by_name_[name] = id;
  return id;
}

std::string ShardStore::path(uint32_t id) const {
  MutexLock lock(&mu_);
  return shards_.at(id).file;
}

const RemoteObject& ShardStore::object(uint32_t id) const {
  MutexLock lock(&mu_);
  return shards_.at(id).object;  // never changes once added; shards_ is a deque
}

bool ShardStore::changed_on_server(uint32_t id) const {
  MutexLock lock(&mu_);
  return shards_.at(id).changed;
}

void ShardStore::count_locked(const Shard& s, uint64_t FetchTotals::*field, uint64_t n) {
  totals_.*field += n;
  for (const auto& d : s.datasets) per_dataset_[d].*field += n;
}

bool ShardStore::may_retry_locked(const Shard& s) const {
  const double cooldown_s = std::max(1.0, 4 * options_.http.backoff_max_s);
  return s.state == State::kFailed && now_ms() - s.failed_at_ms >= static_cast<int64_t>(cooldown_s * 1000);
}

Result<ShardStore::Readiness> ShardStore::acquire(const std::vector<uint32_t>& ids, uint64_t waiter) {
  MutexLock lock(&mu_);
  uint64_t total = 0;
  bool missing = false;
  for (uint32_t id : ids) {
    Shard& s = shards_.at(id);
    total += s.object.size;
    struct stat st {};
    if (s.state == State::kHere && ::stat(s.file.c_str(), &st) != 0) {  // removed by someone else: fetch it again
      s.state = State::kAbsent;
      bytes_ -= s.object.size;
    }
    missing |= s.state == State::kAbsent || s.state == State::kFetching || may_retry_locked(s);
  }
  if (total > max_bytes_) {
    return Error(ErrorCode::kResourceExhausted,
                 "one task reads " + std::to_string(ids.size()) + " remote shards of " + std::to_string(total) +
                     " bytes together, more than remote.cache_max_bytes (" + std::to_string(max_bytes_) +
                     "): raise remote.cache_max_bytes, or use smaller shards or batches");
  }
  if (!missing) {
    drop_holds_locked(waiter);
    for (uint32_t id : ids) {
      ++shards_[id].pins;
      shards_[id].used = ++tick_;
    }
    return Readiness::kReady;
  }
  // The task waits. Its shards that are here are held for it until it runs, so that fetching the others cannot evict
  // them (with a cache barely larger than one task's shards, it would never run).
  const uint64_t since = waiting_since_.emplace(waiter, ++tick_).first->second;
  for (uint32_t id : ids) {
    Shard& s = shards_[id];
    if (s.state == State::kFailed && !may_retry_locked(s)) continue;
    if (s.state == State::kFailed) s.state = State::kAbsent;
    if (s.holds.empty() && s.state != State::kHere) {
      count_locked(s, &FetchTotals::waited);
      if (s.state == State::kAbsent && std::find(queue_.begin(), queue_.end(), id) == queue_.end()) {
        queue_.push_back(id);
      }
    }
    s.holds.emplace(waiter, since);
  }
  schedule_locked();
  return Readiness::kWaiting;
}

void ShardStore::drop_holds_locked(uint64_t waiter) {
  if (waiting_since_.erase(waiter) == 0) return;
  for (Shard& s : shards_) s.holds.erase(waiter);
}

uint64_t ShardStore::oldest_hold_locked(const Shard& s) const {
  uint64_t oldest = UINT64_MAX;
  for (const auto& [waiter, since] : s.holds) oldest = std::min(oldest, since);
  return oldest;
}

void ShardStore::release(const std::vector<uint32_t>& ids) {
  MutexLock lock(&mu_);
  for (uint32_t id : ids) {
    if (shards_.at(id).pins > 0) --shards_[id].pins;
  }
  schedule_locked();
  done_.notify_all();  // fetch_now may be waiting for room
}

void ShardStore::unhold(uint64_t waiter) {
  MutexLock lock(&mu_);
  drop_holds_locked(waiter);
  schedule_locked();
  done_.notify_all();
}

void ShardStore::set_demand(uint64_t stream, std::vector<uint32_t> ahead, uint64_t position,
                            const std::unordered_map<uint32_t, uint64_t>* last_use) {
  MutexLock lock(&mu_);
  Demand& d = demand_[stream];
  d.ahead = std::move(ahead);
  d.position = position;
  if (last_use != nullptr) d.last_use = *last_use;
  schedule_locked();
}

void ShardStore::drop_demand(uint64_t stream) {
  MutexLock lock(&mu_);
  demand_.erase(stream);
  schedule_locked();
  done_.notify_all();
}

bool ShardStore::make_room_locked(uint64_t bytes, uint64_t since) {
  if (bytes > max_bytes_) return false;
  if (bytes_ + bytes <= max_bytes_) return true;
  // Rank what may go: 0 read by no stream again this epoch, 1 read again (not ahead), 2 ahead-listed (for a waiting
  // task only), 3 held only for waiters younger than this one; each rank least recently used first.
  std::unordered_set<uint32_t> ahead;
  for (const auto& [stream, d] : demand_) ahead.insert(d.ahead.begin(), d.ahead.end());
  auto rank = [&](uint32_t id) REQUIRES(mu_) {
    const Shard& s = shards_[id];
    if (s.state != State::kHere || s.pins > 0) return -1;
    if (!s.holds.empty()) return since != UINT64_MAX && oldest_hold_locked(s) > since ? 3 : -1;
    if (ahead.count(id)) return since != UINT64_MAX ? 2 : -1;
    for (const auto& [stream, d] : demand_) {
      auto it = d.last_use.find(id);
      if (it != d.last_use.end() && it->second >= d.position) return 1;
    }
    return 0;
  };
  while (bytes_ + bytes > max_bytes_) {
    if (!orphans_.empty()) {  // complete files of earlier runs that no dataset named: first to go
      auto it = orphans_.begin();
      ::unlink((options_.dir + "/" + it->first).c_str());
      bytes_ -= it->second;
      orphans_.erase(it);
      continue;
    }
    int best_rank = 4;
    uint64_t best_used = UINT64_MAX;
    uint32_t best = UINT32_MAX;
    for (uint32_t id = 0; id < shards_.size(); ++id) {
      const int r = rank(id);
      if (r < 0) continue;
      if (r < best_rank || (r == best_rank && shards_[id].used < best_used)) {
        best_rank = r;
        best_used = shards_[id].used;
        best = id;
      }
    }
    if (best == UINT32_MAX) return false;
    Shard& s = shards_[best];
    ::unlink(s.file.c_str());  // a worker reading it keeps its open file
    s.state = State::kAbsent;
    bytes_ -= s.object.size;
    count_locked(s, &FetchTotals::evicted);
    if (!s.holds.empty()) queue_.push_back(best);  // a younger waiter still needs it
  }
  return true;
}

void ShardStore::schedule_locked() {
  while (!stopping_ && fetching_ < options_.concurrency) {
    auto fetchable = [&](uint32_t id) REQUIRES(mu_) {
      const Shard& s = shards_[id];
      return s.state == State::kAbsent || may_retry_locked(s);
    };
    std::erase_if(queue_, [&](uint32_t id) REQUIRES(mu_) {
      return shards_[id].state == State::kHere || shards_[id].holds.empty();
    });
    // The shard the oldest waiting task needs first.
    uint32_t pick = UINT32_MAX;
    uint64_t since = UINT64_MAX;
    for (uint32_t id : queue_) {
      const uint64_t oldest = oldest_hold_locked(shards_[id]);
      if (fetchable(id) && oldest < since) {
        pick = id;
        since = oldest;
      }
    }
    // Then the streams' ahead lists, one stream a turn (the first after the one served last).
    for (size_t n = 0; pick == UINT32_MAX && n < demand_.size(); ++n) {
      auto it = demand_.upper_bound(next_stream_);
      if (it == demand_.end()) it = demand_.begin();
      next_stream_ = it->first;
      for (uint32_t id : it->second.ahead) {
        if (fetchable(id)) {
          pick = id;
          break;
        }
      }
    }
    if (pick == UINT32_MAX) return;
    Shard& s = shards_[pick];
    if (!make_room_locked(s.object.size, since)) return;  // waits for pins to go (release) or demand to change
    std::erase(queue_, pick);
    s.state = State::kFetching;
    bytes_ += s.object.size;
    ++fetching_;
    jobs_.emplace_back(pick, since == UINT64_MAX);
    if (threads_.size() < options_.concurrency) threads_.emplace_back([this] { fetch_thread(); });
    wake_.notify_one();
  }
}

}  // namespace batchd::daemon::remote
