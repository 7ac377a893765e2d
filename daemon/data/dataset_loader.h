// dataset_loader.h — opens the datasets that take long (a webdataset's shard index), and computes every dataset's
// fingerprint (data/fingerprint.h), off the event loop.
//
// DatasetRegistry::reload hands out LoadJobs; the loader runs them in order of arrival on kLoaderThreads threads of
// its own (so a slow remote listing or a hung mount holds one of them, not every dataset declared after it) and
// posts each result back to the event loop, where it is installed in the registry and `on_installed(name)` runs
// (the daemon forks its workers again there, so they hold the new dataset). Meanwhile the dataset is "loading":
// the event loop keeps serving, readiness and the systemd watchdog are not delayed, and OpenStream on it is refused
// with "indexing (k of n shards)". Fingerprint jobs (DatasetRegistry::take_fingerprint_jobs) run the same way, before
// any open still queued (what a fingerprint reads is bounded; an index is not); each result is given to the registry
// (set_fingerprint) and logged on the event loop. A background open that is installed queues its dataset's
// fingerprint itself.
//
// The threads never log and take no lock a forked worker could need (data/dataset.h OpenContext); what there is to
// say is logged on the event loop, with the result. cancel() (on the event loop, at SIGTERM) cancels the job under
// way and the queued ones without waiting, and drops every result not yet installed; stop() (and the destructor)
// also joins the threads — call it once the event loop is done, since a job under way may take a while to see the
// cancellation (a stat on a hung NFS mount). An exception in an opener becomes that dataset's error.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "batchd/mutex.h"
#include "data/dataset.h"

namespace batchd::daemon {

// Jobs run at once: enough that a few slow loads (remote listings, each bounded in pages and time) leave room for
// the others; few enough that indexing at start-up does not take every core from the workers.
inline constexpr size_t kLoaderThreads = 4;

class DatasetLoader final {
 public:
  // `registry` and `io` must outlive the loader; `on_installed` runs on the event loop after each install.
  DatasetLoader(boost::asio::io_context& io, DatasetRegistry& registry, std::string cache_dir,
                std::function<void(const std::string& name)> on_installed);
  ~DatasetLoader();
  DatasetLoader(const DatasetLoader&) = delete;
  DatasetLoader& operator=(const DatasetLoader&) = delete;

  // Remote shards of the datasets opened from now on are fetched into `store` (null: refused). Before load().
  void set_shard_store(std::shared_ptr<remote::ShardStore> store) { shard_store_ = std::move(store); }
  // Queues jobs (from the event loop); each one's progress is visible through the registry from now on.
  void load(std::vector<LoadJob> jobs);
  // Queues fingerprint jobs (from the event loop).
  void fingerprint(std::vector<FingerprintJob> jobs);
  // Cancels everything; returns at once. Idempotent.
  void cancel();
  // cancel(), then joins the threads. Idempotent.
  void stop();

 private:
  void run();
  // On the event loop: a result of the loader's thread.
  void installed(const LoadJob& job, Result<std::shared_ptr<const Dataset>> result);
  void fingerprinted(const FingerprintJob& job, const Result<Fingerprint>& result);

  boost::asio::io_context& io_;
  DatasetRegistry& registry_;
  const std::string cache_dir_;
  std::shared_ptr<remote::ShardStore> shard_store_;
  std::function<void(const std::string&)> on_installed_;
  Mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<LoadJob> queue_ GUARDED_BY(mutex_);
  std::deque<FingerprintJob> fingerprints_ GUARDED_BY(mutex_);  // run before queue_
  std::set<std::shared_ptr<LoadProgress>> running_ GUARDED_BY(mutex_);  // the progress of the jobs under way
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // posted results check it: the loader may be gone
  bool cancelled_ = false;  // event loop only: results posted before cancel() are dropped too
  std::vector<std::thread> threads_;
};

}  // namespace batchd::daemon
