// batchd as a systemd service: the sd_notify protocol against a test NOTIFY_SOCKET, and the shipped unit file.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

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

namespace batchd::testing {
namespace {

void write_datasets(const std::string& path, const std::vector<std::string>& names, const std::string& extra = "") {
  std::ofstream out(path);
  for (const auto& n : names) {
    const std::string split = n == "fashion-mnist" ? "train" : "t10k";
    out << "[datasets." << n << "]\nformat = \"idx\"\nimages = \"" FMNIST_DIR "/" << split
        << "-images-idx3-ubyte.gz\"\nlabels = \"" FMNIST_DIR "/" << split << "-labels-idx1-ubyte.gz\"\n";
  }
  out << extra;
}

TEST(ServiceTest, SighupReloadsDatasetsWithoutDroppingRunningStreams) {
  const std::string config = ::testing::TempDir() + "reload-" + std::to_string(::getpid()) + ".toml";
  write_datasets(config, {"fashion-mnist-test"});
  auto daemon = start_daemon("", 2, {"--config", config});
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.num_epochs = 2;
  auto running = client->open_stream(o);
  ASSERT_TRUE(running.ok());
  std::vector<std::multiset<int64_t>> epochs(2);
  auto take = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto batch = running->next();
      ASSERT_TRUE(batch.ok()) << batch.error().message();
      if (!*batch) return;
      const Tensor* index = (*batch)->find("index");
      for (int64_t k = 0; k < index->numel(); ++k) epochs.at((*batch)->epoch()).insert(index->data_as<int64_t>()[k]);
    }
  };
  take(30);

  // Replace the dataset list: fashion-mnist-test goes away, fashion-mnist arrives.
  write_datasets(config, {"fashion-mnist"});
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  EXPECT_TRUE(eventually([&] { return client->open_stream(fmnist_options("fashion-mnist", 256)).ok(); }))
      << "the new dataset is served after the reload";
  auto removed = client->open_stream(fmnist_options("fashion-mnist-test"));
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.error().code(), ErrorCode::kNotFound);

  take(1000);  // the running stream reads on, from the data it opened, through the worker restarts
  for (const auto& e : epochs) {
    EXPECT_EQ(e.size(), 10000u);
    EXPECT_EQ(std::set<int64_t>(e.begin(), e.end()).size(), 10000u);
  }

  // A broken file is refused and the current datasets stay.
  write_datasets(config, {"fashion-mnist"}, "[datasets.broken]\nformat = \"idx\"\nimagez = \"x\"\n");
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto still = client->open_stream(fmnist_options("fashion-mnist", 256));
  ASSERT_TRUE(still.ok()) << still.error().message();
  EXPECT_TRUE(still->next().ok());
}

}  // namespace
}  // namespace batchd::testing

namespace batchd::testing {
namespace {

// GET `path` from 127.0.0.1:port; returns the whole response ("" if the connection failed).
std::string http_get(uint16_t port, const std::string& path) {
  wire::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return "";
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) < 0) return "";
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd.get(), buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(ServiceTest, PrometheusEndpointExposesStreamAndWorkerMetrics) {
  const uint16_t port = static_cast<uint16_t>(20000 + ::getpid() % 20000);
  const std::string config = ::testing::TempDir() + "metrics-" + std::to_string(::getpid()) + ".toml";
  write_datasets(config, {"fashion-mnist-test"},
                 "[metrics]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\nper_stream = true\n");
  auto daemon = start_daemon("", 2, {"--config", config});
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->next().ok());
  const std::string body = http_get(port, "/metrics");
  EXPECT_NE(body.find("HTTP/1.1 200"), std::string::npos) << body;
  EXPECT_NE(body.find("text/plain; version=0.0.4"), std::string::npos) << body;
  EXPECT_NE(body.find("batchd_streams 1\n"), std::string::npos) << body;
  EXPECT_NE(body.find("# TYPE batchd_stream_samples_total counter"), std::string::npos) << body;
  EXPECT_NE(body.find("batchd_stream_samples_total{stream=\"1\",dataset=\"fashion-mnist-test\",pipeline=\"fmnist\"}"),
            std::string::npos)
      << body;
  EXPECT_EQ(body.find("client_pid"), std::string::npos) << "a TCP reader is nobody: no client pid" << body;
  EXPECT_NE(body.find("batchd_worker_busy_seconds_total{worker=\"1\"}"), std::string::npos) << body;
  EXPECT_NE(http_get(port, "/").find("404"), std::string::npos);
}

TEST(ServiceTest, PrometheusEndpointCountsStreamsWithoutNamingThemByDefault) {
  const uint16_t port = static_cast<uint16_t>(20000 + (::getpid() + 7919) % 20000);
  const std::string config = ::testing::TempDir() + "metrics-counts-" + std::to_string(::getpid()) + ".toml";
  write_datasets(config, {"fashion-mnist-test"}, "[metrics]\nlisten = \"127.0.0.1:" + std::to_string(port) + "\"\n");
  auto daemon = start_daemon("file_system", 2, {"--config", config});
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(stream->next().ok());
  const std::string body = http_get(port, "/metrics");
  EXPECT_NE(body.find("batchd_streams 1\n"), std::string::npos) << body;
  EXPECT_NE(body.find("batchd_segment_bytes " + std::to_string(stream->info().segment_bytes) + "\n"),
            std::string::npos)
      << body;
  for (const std::string& hidden : {std::string("batchd_stream_samples_total"), std::string("client_pid"),
                                    std::string("dataset=\""), stream->info().segment_name}) {
    EXPECT_EQ(body.find(hidden), std::string::npos) << hidden << " in\n" << body;
  }
  EXPECT_NE(body.find("batchd_worker_batches_total{worker=\"0\"}"), std::string::npos) << body;
}

}  // namespace
}  // namespace batchd::testing
