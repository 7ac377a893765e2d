#include "data/dataset_loader.h"

#include <optional>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace batchd::daemon {

DatasetLoader::DatasetLoader(boost::asio::io_context& io, DatasetRegistry& registry, std::string cache_dir,
                             std::function<void(const std::string&)> on_installed)
    : io_(io), registry_(registry), cache_dir_(std::move(cache_dir)), on_installed_(std::move(on_installed)) {
  for (size_t i = 0; i < kLoaderThreads; ++i) threads_.emplace_back([this] { run(); });
}

DatasetLoader::~DatasetLoader() { stop(); }

void DatasetLoader::load(std::vector<LoadJob> jobs) {
  if (jobs.empty()) return;
  for (const LoadJob& job : jobs) spdlog::info("dataset {}: indexing in the background", job.config.name);
  {
    MutexLock lock(&mutex_);
    for (auto& job : jobs) queue_.push_back(std::move(job));
  }
  wake_.notify_all();  // one thread per job: with notify_one, a second job of the same call waited for a free thread
}

void DatasetLoader::fingerprint(std::vector<FingerprintJob> jobs) {
  if (jobs.empty()) return;
  {
    MutexLock lock(&mutex_);
    for (auto& job : jobs) fingerprints_.push_back(std::move(job));
  }
  wake_.notify_all();
}

void DatasetLoader::cancel() {
  cancelled_ = true;
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
    for (auto& job : queue_) job.progress->cancel = true;
    queue_.clear();
    for (auto& job : fingerprints_) job.progress->cancel = true;
    fingerprints_.clear();
    for (const auto& progress : running_) progress->cancel = true;
  }
  wake_.notify_all();
}

void DatasetLoader::stop() {
  cancel();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

namespace {

// Runs `body` (an open or a fingerprint: `what`) on the loader's thread: an exception becomes the result's error.
template <typename T, typename F>
Result<T> guarded(const char* what, F body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Error(ErrorCode::kResourceExhausted, std::string("out of memory while ") + what +
                                                    "; raise the daemon's memory limit (MemoryMax, RLIMIT_AS) or "
                                                    "split the dataset");
  } catch (const std::exception& e) {
    return Error(ErrorCode::kInternal, std::string(what) + " failed: " + e.what());
  }
}

}  // namespace

void DatasetLoader::run() {
  for (;;) {
    std::optional<LoadJob> open;
    std::optional<FingerprintJob> print;
    {
      MutexLock lock(&mutex_);
      while (!stopping_ && queue_.empty() && fingerprints_.empty()) wake_.wait(mutex_);
      if (stopping_) return;
      if (!fingerprints_.empty()) {
        print = std::move(fingerprints_.front());
        fingerprints_.pop_front();
      } else {
        open = std::move(queue_.front());
        queue_.pop_front();
      }
      running_.insert(open ? open->progress : print->progress);
    }
    const std::shared_ptr<LoadProgress> progress = open ? open->progress : print->progress;
    const std::atomic<bool>& cancel = progress->cancel;
    using DatasetResult = Result<std::shared_ptr<const Dataset>>;
    auto opened = std::make_shared<DatasetResult>(Error(ErrorCode::kUnavailable, "cancelled"));
    auto printed = std::make_shared<Result<Fingerprint>>(Error(ErrorCode::kUnavailable, "cancelled"));
    if (!cancel) {
      if (open) {
        *opened = guarded<std::shared_ptr<const Dataset>>(
            "indexing", [&] { return open_dataset(open->config, OpenContext{cache_dir_, progress.get(), shard_store_}); });
      } else {
        *printed = guarded<Fingerprint>("computing the fingerprint",
                                        [&] { return print->dataset->fingerprint(&cancel); });
      }
    }
    {
      MutexLock lock(&mutex_);
      running_.erase(progress);
      if (stopping_) return;  // the loop may be gone: drop the result
    }
    if (cancel) continue;  // a reload superseded it; the registry would drop it anyway
    // The result travels to the event loop, which owns the registry (shared_ptrs: the handler must be copyable).
    auto alive = std::weak_ptr<bool>(alive_);
    if (open) {
      boost::asio::post(io_, [this, alive, job = std::move(*open), opened] {
        if (!alive.expired() && !cancelled_) installed(job, std::move(*opened));
      });
    } else {
      boost::asio::post(io_, [this, alive, job = std::move(*print), printed] {
        if (!alive.expired() && !cancelled_) fingerprinted(job, *printed);
      });
    }
  }
}

void DatasetLoader::installed(const LoadJob& job, Result<std::shared_ptr<const Dataset>> result) {
  const std::string name = job.config.name;
  const bool ok = result.ok();
  const std::string why = ok ? "" : result.error().message();
  const uint64_t samples = ok ? (*result)->size() : 0;
  const std::string summary = ok ? (*result)->summary() : "";
  if (!registry_.install(job, std::move(result))) return;  // superseded by a reload meanwhile
  if (!ok) {
    spdlog::warn("dataset {} is unavailable: {}", name, why);
    return;  // nothing new for the workers to hold
  }
  spdlog::info("dataset {}: {} samples, indexed{}", name, samples, summary.empty() ? "" : ": " + summary);
  fingerprint(registry_.take_fingerprint_jobs());
  on_installed_(name);
}

void DatasetLoader::fingerprinted(const FingerprintJob& job, const Result<Fingerprint>& result) {
  if (!registry_.set_fingerprint(job, result)) return;  // superseded
  const std::string& name = job.dataset->name();
  if (result.ok()) {
    spdlog::info("dataset {}: fingerprint {} ({})", name, result->hex, result->covers);
  } else {
    spdlog::warn("dataset {}: no fingerprint: {}", name, result.error().message());
  }
}

}  // namespace batchd::daemon
