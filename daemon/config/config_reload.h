// config_reload.h — SIGHUP: reload [datasets] and [pipelines] from the daemon's config file.
//
// Running streams keep the data and the spec they opened with; a config that does not parse (a bad pipeline
// included) changes nothing and is logged (and told to systemd as the service status). After a reload the workers
// fork again from the daemon, which then holds the new datasets. Other sections need a restart (logged). Without a
// --config file there is nothing to reload (the embedded configuration is fixed). Runs on the event loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <string>

#include "config/config.h"
#include "data/dataset.h"
#include "data/dataset_loader.h"
#include "server/service_notify.h"
#include "streams/stream_manager.h"
#include "workers/worker_pool.h"

namespace batchd::daemon {

class ConfigReload final {
 public:
  // Everything the reload touches; all must outlive this object.
  struct Parts {
    Config& config;
    DatasetRegistry& datasets;
    StreamManager& streams;
    DatasetLoader& loader;
    WorkerPool& pool;
    ServiceNotifier& notifier;
  };
  // `config_path`: the --config file ("" = the embedded configuration). Handles SIGHUP from construction on.
  ConfigReload(boost::asio::io_context& io, std::string config_path, Parts parts);

  // Stops handling SIGHUP (the drain: nothing may keep the event loop alive).
  void cancel() { hangup_.cancel(); }

 private:
  void arm();
  void reload();

  boost::asio::signal_set hangup_;
  std::string config_path_;
  Parts parts_;
};

}  // namespace batchd::daemon
