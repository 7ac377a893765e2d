#include "server/service_notify.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include <cstdlib>

namespace batchd::daemon {

void ServiceNotifier::ready(const std::string& status) {
  sd_notifyf(0, "READY=1\nSTATUS=%s\nMAINPID=%d", status.c_str(), static_cast<int>(::getpid()));
}

void ServiceNotifier::status(const std::string& status) { sd_notifyf(0, "STATUS=%s", status.c_str()); }

void ServiceNotifier::stopping(const std::string& status) {
  stopped_ = true;
  timer_.cancel();
  sd_notifyf(0, "STOPPING=1\nSTATUS=%s", status.c_str());
}

void ServiceNotifier::reloading() { sd_notify(0, "RELOADING=1\nSTATUS=reloading datasets"); }

void ServiceNotifier::start_watchdog() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
  interval_us_ = usec / 2;
  spdlog::info("systemd watchdog: pinging every {} ms", interval_us_ / 1000);
  ping();
}

void ServiceNotifier::ping() {
  if (stopped_) return;
  sd_notify(0, "WATCHDOG=1");
  timer_.expires_after(std::chrono::microseconds(interval_us_));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) ping();
  });
}

void setup_logging() {
  // systemd sets JOURNAL_STREAM=<dev>:<inode> of the stream stderr is connected to.
  bool journal = false;
  if (const char* js = std::getenv("JOURNAL_STREAM"); js != nullptr) {
    struct stat st {};
    unsigned long dev = 0, ino = 0;
    journal = std::sscanf(js, "%lu:%lu", &dev, &ino) == 2 && ::fstat(2, &st) == 0 && st.st_dev == dev &&
              st.st_ino == ino;
  }
  if (journal) {
    auto logger = std::make_shared<spdlog::logger>("batchd", std::make_shared<spdlog::sinks::systemd_sink_st>("batchd"));
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("%v");
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ batchd[%P] %v");
  }
}

}  // namespace batchd::daemon
