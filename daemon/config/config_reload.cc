#include "config/config_reload.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

namespace batchd::daemon {

ConfigReload::ConfigReload(boost::asio::io_context& io, std::string config_path, Parts parts)
    : hangup_(io, SIGHUP), config_path_(std::move(config_path)), parts_(parts) {
  arm();
}

void ConfigReload::arm() {
  hangup_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    arm();
    reload();
  });
}

void ConfigReload::reload() {
  if (config_path_.empty()) {
    spdlog::info("SIGHUP: no --config file to reload (the embedded configuration is fixed)");
    return;
  }
  auto& [config, datasets, streams, loader, pool, notifier] = parts_;
  notifier.reloading();
  auto fresh = load_config_file(config_path_);
  if (!fresh.ok()) {
    spdlog::error("SIGHUP: keeping the current datasets and pipelines: {}", fresh.error().message());
    notifier.status("reload failed: " + fresh.error().message());
    notifier.ready("serving " + config.socket + " (reload failed, see the log)");
    return;
  }
  auto summary = datasets.reload(fresh->datasets, streams.dataset_keys_in_use(), config.cache_dir);
  config.pipelines = std::move(fresh->pipelines);  // plan() reads them at each OpenStream
  auto names = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
    return s.empty() ? std::string("none") : s;
  };
  spdlog::info("SIGHUP: reloaded from {}: datasets added {}, changed {}, removed {}, unavailable {}; {} "
               "pipelines; only [datasets] and [pipelines] are reloaded (other changes need a restart)",
               config_path_, names(summary.added), names(summary.changed), names(summary.removed),
               names(summary.unavailable), config.pipelines.size());
  for (const auto& [name, why] : summary.changed_on_disk) {
    spdlog::info("SIGHUP: dataset {} is opened again: {}", name, why);
  }
  for (const auto& name : summary.unavailable) {
    if (auto d = datasets.find(name); !d.ok()) spdlog::warn("dataset {}: {}", name, d.error().message());
  }
  // A dataset changed or removed has a new key (or none): its old load's cache entries can never be hit again.
  if (const uint64_t bytes = streams.drop_stale_cache(); bytes > 0) {
    spdlog::info("SIGHUP: dropped {} bytes of sample-cache entries of datasets changed or removed", bytes);
  }
  loader.fingerprint(datasets.take_fingerprint_jobs());  // every available dataset's, computed again
  loader.load(std::move(summary.jobs));
  // Workers fork again from the daemon, which now holds the new datasets; the old ones are retired without
  // waiting for them (a stopped worker is killed after its exit grace).
  pool.restart_all();
  notifier.ready("serving " + config.socket + " with " + std::to_string(config.workers) + " workers");
}

}  // namespace batchd::daemon
