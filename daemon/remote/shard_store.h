// shard_store.h — remote shards fetched once per host into daemon.cache_dir/shards, bounded in bytes, shared by every
// dataset, stream and trainer of the daemon; fetched ahead along the streams' known order.
//
// Files: <dir>/<32 hex digits>.tar, the digits XXH3-128 of the shard's URL, ETag and size (so a shard replaced on the
// server never reuses the old file), mode 0600 in a directory of mode 0700, the daemon's. A shard is downloaded whole
// into "<name>.part" (O_EXCL) and renamed when complete and checked (size, ETag): a crash leaves only .part files,
// which open() removes, so no partial shard is ever read. A fetch that failed leaves "<name>.error" holding the
// reason (URL, HTTP status or curl error; no secret), which a worker reading the missing shard quotes.
// Files of complete shards found at start are kept (they count in the bound and are used when a dataset names the
// same URL, ETag and size; evicted first otherwise).
//
// Bound: remote.cache_max_bytes, the bytes of complete files plus those being fetched. Room is made by evicting
// (unlinking: a worker that has a file open keeps reading it) shards that no task holds (pin), in this order: shards
// no stream will read again this epoch (each stream tells its position and, per epoch, the last position at which
// it reads each shard: the order is known), then shards no stream asks for ahead (least recently used first), and
// for a task waiting on a shard (urgent) also shards asked for ahead. A waiting task's shards that are here are held
// for it (never evicted) until it runs, except to make room for an older waiting task (the oldest waiter always gets
// its shards: no two waiters can block each other). A shard larger than the bound is refused.
//
// Fetching: fetch_concurrency threads (started at the first fetch, after the workers were forked), each with its own
// remote::ObjectStore (connections reused). Order: shards tasks wait for (urgent) first, then each stream's ahead
// list in its order, streams served in turn. A fetch that fails (after ObjectStore's retries) marks the shard failed
// for a cool-down (backoff_max_s x 4); a task needing it is then let through, and its samples fail with the reason
// (the stream's on_error applies). Completions run `on_change` (set by the daemon: it pumps the scheduler).
//
// Threads: every method may be called from any thread (one mutex guards the state; no call blocks on a transfer
// except fetch_now, the dataset loader's). Counters are read by the event loop for status and metrics.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "batchd/mutex.h"
#include "batchd/result.h"
#include "remote/remote_settings.h"
#include "remote/object_store.h"

namespace batchd::daemon::remote {

struct ShardStoreOptions {
  std::string dir;           // daemon.cache_dir + "/shards"
  int64_t max_bytes = -1;    // remote.cache_max_bytes (-1: half the free space at open, plus what is cached)
  uint32_t concurrency = 4;  // remote.fetch_concurrency
  HttpSettings http;
};

// Counters, per dataset name and for the whole store.
struct FetchTotals {
  uint64_t fetched = 0, fetched_bytes = 0;  // downloads completed (load-time indexing included)
  uint64_t prefetched = 0;                  // of those, fetched ahead (no task was waiting for it)
  uint64_t waited = 0;                      // tasks that had to wait for a shard (not fetched ahead in time)
  uint64_t failed = 0, evicted = 0;
};

// The options from the daemon's config: [remote] and daemon.cache_dir (the shards go in cache_dir + "/shards").
ShardStoreOptions remote_store_options(const RemoteSettings& remote, const std::string& cache_dir);

struct ShardStoreStatus {
  std::string dir;
  uint64_t max_bytes = 0, bytes = 0, files = 0, fetching = 0;
  FetchTotals totals;
};

class ShardStore final {
 public:
  // Creates dir (0700) if missing, removes .part and .error leftovers, takes stock of complete files.
  // kInvalidArgument (dir not absolute), kIo naming the dir and the fix.
  static Result<std::shared_ptr<ShardStore>> open(ShardStoreOptions options);
  ~ShardStore();  // stop()
  // Stops the fetch threads (transfers under way are abandoned, their .part files removed); on_change is not called
  // again. Idempotent.
  void stop();
  ShardStore(const ShardStore&) = delete;
  ShardStore& operator=(const ShardStore&) = delete;

  void set_on_change(std::function<void()> on_change);
  const HttpSettings& http() const { return options_.http; }
  uint32_t concurrency() const { return options_.concurrency; }

  // A dataset's shard (dataset load): its id (the same for the same URL, ETag and size). `aws` signs its requests.
  uint32_t add(const RemoteObject& object, std::shared_ptr<const AwsSettings> aws, const std::string& dataset);
  std::string path(uint32_t id) const;  // the local file (which may not exist yet)
  const RemoteObject& object(uint32_t id) const;
  // Downloads the shard now if it is not here (the loader's thread, for indexing), making room. Errors as fetch.
  // With `pin`, the shard is pinned once here (release() it): nothing evicts it between the fetch and its reading.
  Status fetch_now(uint32_t id, const std::atomic<bool>* cancel, bool pin = false);
  // Whether a fetch saw the shard changed on the server (ETag) since it was added.
  bool changed_on_server(uint32_t id) const;

  // --- Streams (the event loop).
  enum class Readiness { kReady, kWaiting };
  // kReady: every shard is here (or failed: the task may run and fail its samples), and is pinned until release()
  // with the same `ids`. kWaiting: nothing pinned; the missing ones are fetched first (the oldest waiter's first) and
  // those here are held for `waiter` (a stream id; one waiting task per waiter). kResourceExhausted if the shards
  // together exceed the bound (the task can never run), naming remote.cache_max_bytes.
  Result<Readiness> acquire(const std::vector<uint32_t>& ids, uint64_t waiter);
  void release(const std::vector<uint32_t>& ids);
  // `waiter`'s waiting task will not ask again (its stream closed or dropped it): nothing is held for it any more.
  void unhold(uint64_t waiter);
  // The waiter id the dataset loader uses (streams use their ids, which start at 1).
  static constexpr uint64_t kLoaderWaiter = 0;
  // Stream `stream`'s ahead list (fetched in this order, never evicted for prefetch) and its position in the epoch;
  // `last_use` (when not null) is, for the epoch being read, the last position at which it reads each shard.
  void set_demand(uint64_t stream, std::vector<uint32_t> ahead, uint64_t position,
                  const std::unordered_map<uint32_t, uint64_t>* last_use);
  void drop_demand(uint64_t stream);

  ShardStoreStatus status() const;
  // A dataset load's shards (`ids`: those it names now, not an earlier load's): here / named, bytes here / named;
  // and the counters of every load of `dataset`.
  struct DatasetView {
    uint64_t shards = 0, shards_here = 0, bytes = 0, bytes_here = 0;
    FetchTotals totals;
  };
  DatasetView dataset_view(const std::string& dataset, const std::vector<uint32_t>& ids) const;

 private:
  explicit ShardStore(ShardStoreOptions options);
  enum class State { kAbsent, kFetching, kHere, kFailed };
  struct Shard {
    RemoteObject object;
    std::shared_ptr<const AwsSettings> aws;
    std::string file;  // full path
    std::set<std::string> datasets;
    State state = State::kAbsent;
    uint32_t pins = 0;
    uint64_t used = 0;  // tick of the last acquire/fetch (LRU)
    int64_t failed_at_ms = 0;
    std::map<uint64_t, uint64_t> holds;  // waiter -> since (the tick its wait began): held for waiting tasks
    bool changed = false;
    std::string last_error;  // of the last failed fetch (no secret)
  };
  struct Demand {
    std::vector<uint32_t> ahead;
    uint64_t position = 0;
    std::unordered_map<uint32_t, uint64_t> last_use;
  };

  // All with mu_ held.
  void schedule_locked() REQUIRES(mu_);
  // Makes room for `bytes`: for a waiting task (`since` = when its wait began) ahead-listed shards and shards held
  // only for younger waiters may go too; for a prefetch (since = UINT64_MAX) neither.
  bool make_room_locked(uint64_t bytes, uint64_t since) REQUIRES(mu_);
  void drop_holds_locked(uint64_t waiter) REQUIRES(mu_);
  uint64_t oldest_hold_locked(const Shard& s) const REQUIRES(mu_);  // UINT64_MAX: held for no one
  void count_locked(const Shard& s, uint64_t FetchTotals::*field, uint64_t n = 1) REQUIRES(mu_);
  bool may_retry_locked(const Shard& s) const REQUIRES(mu_);
  // The transfer itself (no lock held): .part, ObjectStore::fetch, fsync, rename; .error on failure.
  Status download(ObjectStore& store, const Shard& shard);
  void fetch_thread() EXCLUDES(mu_);
  // fetch_now once a fetch thread has the shard: waits for it; nullopt if it is gone again (fetch_now fetches it).
  std::optional<Status> fetch_now_wait(uint32_t id, const std::atomic<bool>* cancel, bool pin) REQUIRES(mu_);
  void finish_locked(uint32_t id, const Status& result, bool ahead) REQUIRES(mu_);
  void notify() EXCLUDES(mu_);

  const ShardStoreOptions options_;
  uint64_t max_bytes_ = 0;
  mutable Mutex mu_;
  std::condition_variable_any wake_;  // the fetch threads: a job, or stopping_
  std::condition_variable_any done_;  // fetch_now: a fetch finished
  std::deque<Shard> shards_ GUARDED_BY(mu_);  // by id; a deque: object() hands out references add() must not move
  std::map<std::string, uint32_t> by_name_ GUARDED_BY(mu_);  // file name -> id
  // Complete files found at open and not (yet) claimed: name -> size.
  std::map<std::string, uint64_t> orphans_ GUARDED_BY(mu_);
  std::map<uint64_t, Demand> demand_ GUARDED_BY(mu_);
  std::vector<uint32_t> queue_ GUARDED_BY(mu_);  // ids waiting tasks need (fetched oldest waiter first)
  std::map<uint64_t, uint64_t> waiting_since_ GUARDED_BY(mu_);  // waiter -> the tick its wait began
  uint64_t bytes_ GUARDED_BY(mu_) = 0;  // complete files + reservations of fetches under way
  uint64_t tick_ GUARDED_BY(mu_) = 0, fetching_ GUARDED_BY(mu_) = 0, next_stream_ GUARDED_BY(mu_) = 0;
  std::map<std::string, FetchTotals> per_dataset_ GUARDED_BY(mu_);
  FetchTotals totals_ GUARDED_BY(mu_);
  std::vector<std::pair<uint32_t, bool>> jobs_ GUARDED_BY(mu_);  // (id, ahead) picked by schedule_locked
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<bool> cancel_{false};  // set at destruction: transfers under way give up
  std::function<void()> on_change_ GUARDED_BY(mu_);
};

}  // namespace batchd::daemon::remote
