#include "data/dataset_loader.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace batchd::daemon {

DatasetLoader::DatasetLoader(boost::asio::io_context& io, DatasetRegistry& registry, std::string cache_dir,
                             std::function<void(const std::string&)> on_installed)
    : io_(io), registry_(registry), cache_dir_(std::move(cache_dir)), on_installed_(std::move(on_installed)),
      thread_([this] { run(); }) {}

DatasetLoader::~DatasetLoader() { stop(); }

void DatasetLoader::load(std::vector<LoadJob> jobs) {
  if (jobs.empty()) return;
  for (const LoadJob& job : jobs) spdlog::info("dataset {}: indexing in the background", job.config.name);
  {
    std::lock_guard lock(mutex_);
    for (auto& job : jobs) queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void DatasetLoader::cancel() {
  cancelled_ = true;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& job : queue_) job.progress->cancel = true;
    queue_.clear();
    if (current_.progress) current_.progress->cancel = true;
  }
  wake_.notify_one();
}

void DatasetLoader::stop() {
  cancel();
  if (thread_.joinable()) thread_.join();
}

void DatasetLoader::run() {
  for (;;) {
    LoadJob job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      current_ = job;
    }
    Result<std::shared_ptr<const Dataset>> result = Error(ErrorCode::kUnavailable, "cancelled");
    if (!job.progress->cancel) {
      try {
        result = open_dataset(job.config, OpenContext{cache_dir_, job.progress.get()});
      } catch (const std::bad_alloc&) {
        result = Error(ErrorCode::kResourceExhausted, "out of memory while indexing; raise the daemon's memory "
                                                      "limit (MemoryMax, RLIMIT_AS) or split the dataset");
      } catch (const std::exception& e) {
        result = Error(ErrorCode::kInternal, std::string("indexing failed: ") + e.what());
      }
    }
    {
      std::lock_guard lock(mutex_);
      current_ = LoadJob{};
      if (stopping_) return;  // the loop may be gone: drop the result
    }
    if (job.progress->cancel) continue;  // a reload superseded it; install() would drop it anyway
    // The result travels to the event loop, which owns the registry (a shared_ptr: the handler must be copyable).
    auto shared = std::make_shared<Result<std::shared_ptr<const Dataset>>>(std::move(result));
    boost::asio::post(io_, [this, alive = std::weak_ptr<bool>(alive_), job = std::move(job), shared] {
      if (alive.expired() || cancelled_) return;  // the daemon is stopping: nothing is installed any more
      const std::string name = job.config.name;
      const bool ok = shared->ok();
      const std::string why = ok ? "" : shared->error().message();
      const uint64_t samples = ok ? (**shared)->size() : 0;
      const std::string summary = ok ? (**shared)->summary() : "";
      if (!registry_.install(job, std::move(*shared))) return;  // superseded by a reload meanwhile
      if (!ok) {
        spdlog::warn("dataset {} is unavailable: {}", name, why);
        return;  // nothing new for the workers to hold
      }
      spdlog::info("dataset {}: {} samples, indexed{}", name, samples, summary.empty() ? "" : ": " + summary);
      on_installed_(name);
    });
  }
}

}  // namespace batchd::daemon
