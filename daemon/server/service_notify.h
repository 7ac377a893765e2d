// service_notify.h — the systemd service protocol (sd_notify(3) from libsystemd) and journal logging.
//
// Under systemd (Type=notify) the daemon says READY=1 once its socket is bound, STATUS=... lines as it changes,
// and STOPPING=1 when it starts to drain; when the unit sets WatchdogSec=, it pings WATCHDOG=1 at half the
// interval from its event loop, so a hung loop gets the daemon restarted. Outside systemd (no $NOTIFY_SOCKET) every
// call is a no-op.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <string>

namespace batchd::daemon {

class ServiceNotifier final {
 public:
  explicit ServiceNotifier(boost::asio::io_context& io) : timer_(io) {}

  void ready(const std::string& status);
  void status(const std::string& status);
  void stopping(const std::string& status);
  void reloading();  // RELOADING=1; ready() again when done
  // Starts the watchdog pings if the service manager asked for them ($WATCHDOG_USEC).
  void start_watchdog();

 private:
  void ping();
  boost::asio::steady_timer timer_;
  uint64_t interval_us_ = 0;
  bool stopped_ = false;
};

// Logs to the journal (with priorities) when stderr is connected to it ($JOURNAL_STREAM, as systemd sets for
// services), otherwise to stderr. Call once, early.
void setup_logging();

}  // namespace batchd::daemon
