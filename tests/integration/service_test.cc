// batchd as a systemd service: the sd_notify protocol against a test NOTIFY_SOCKET, and the shipped unit file.
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstdlib>
#include <sstream>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

// A datagram socket standing in for systemd's notification socket.
class NotifySocket {
 public:
  NotifySocket() : path_(::testing::TempDir() + "notify-" + std::to_string(::getpid()) + ".sock") {
    ::unlink(path_.c_str());
    fd_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    timeval tv{5, 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~NotifySocket() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  // Next message, "" on timeout.
  std::string next() {
    char buf[4096];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
  // Reads messages until one contains `what` (true) or a timeout (false).
  bool wait_for(const std::string& what, std::string* seen) {
    for (;;) {
      const std::string m = next();
      if (m.empty()) return false;
      *seen += m + "|";
      if (m.find(what) != std::string::npos) return true;
    }
  }

 private:
  std::string path_;
  wire::UniqueFd fd_;
};

TEST(ServiceTest, NotifiesReadyWatchdogAndStoppingLikeATypeNotifyService) {
  NotifySocket notify;
  ::setenv("NOTIFY_SOCKET", notify.path().c_str(), 1);
  ::setenv("WATCHDOG_USEC", "200000", 1);  // 200 ms: pings every 100 ms
  auto daemon = start_daemon("", 1);
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  std::string seen;
  ASSERT_TRUE(notify.wait_for("READY=1", &seen)) << seen;
  EXPECT_NE(seen.find("STATUS=serving " + daemon.socket_path()), std::string::npos) << seen;
  EXPECT_NE(seen.find("MAINPID=" + std::to_string(daemon.pid())), std::string::npos) << seen;
  int pings = 0;
  for (int i = 0; i < 3; ++i) {
    std::string m;
    if (notify.wait_for("WATCHDOG=1", &m)) ++pings;
  }
  EXPECT_EQ(pings, 3) << "the watchdog is pinged at half its interval";
  auto status = daemon.stop();
  ASSERT_TRUE(status.ok());
  seen.clear();
  EXPECT_TRUE(notify.wait_for("STOPPING=1", &seen)) << seen;
}

TEST(ServiceTest, ShippedUnitFilePassesSystemdAnalyzeVerify) {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "systemd-analyze is not installed (Debian package systemd)";
  }
  // The unit names /usr/sbin/batchd; verify a copy that points at the binary just built.
  const std::string unit = ::testing::TempDir() + "batchd.service";
  const std::string cmd = "sed 's|/usr/sbin/batchd|" BATCHD_BIN_DIR "/batchd|' " BATCHD_SOURCE_DIR
                          "/deploy/batchd.service > " + unit + " && systemd-analyze verify " + unit + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  const int status = ::pclose(p);
  // Lines about the unit itself are errors; systemd-analyze also comments on unrelated system units.
  std::string ours;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("batchd.service") != std::string::npos) ours += line + "\n";
  }
  EXPECT_EQ(ours, "") << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
}

}  // namespace
}  // namespace batchd::testing
