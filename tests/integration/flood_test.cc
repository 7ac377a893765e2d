// The flood of issue 14: 50 connections that send status requests and never read a reply, plus 300 connections
// that each hold a request frame as large as the daemon allows, incomplete. The daemon's RSS stays within 64 MiB
// of its idle RSS during the flood and comes back to within 16 MiB of it after, and a normal client (uid 65534
// when the tests run as root) is served before, during and after.
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>

#include <iostream>

#include "daemon_fixture.h"
#include "other_user.h"

namespace batchd::testing {
namespace {

constexpr int kStatusFlooders = 50;
constexpr int kPartialFrames = 300;
constexpr uint32_t kMaxRequestBytes = 65536;  // limits.max_request_bytes's default: the largest request frame

wire::UniqueFd connect_to(const std::string& path) {
  wire::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << std::strerror(errno);
  return fd;
}

// A normal client: opens a stream, reads batches, asks for status. "" if all went well.
std::string normal_client(const std::string& socket) {
  auto client = Client::connect(socket);
  if (!client.ok()) return client.error().message();
  auto stream = client->open_stream(fmnist_options());
  if (!stream.ok()) return "open_stream: " + stream.error().message();
  for (int i = 0; i < 3; ++i) {
    auto batch = stream->next();
    if (!batch.ok() || !*batch) return "batch: " + (batch.ok() ? std::string("end") : batch.error().message());
  }
  auto status = Admin::connect(socket)->status();
  return status.ok() ? "" : "status: " + status.error().message();
}

// Bytes written to `fd` that its reader has not taken yet.
int unread(int fd) {
  int n = 0;
  ::ioctl(fd, SIOCOUTQ, &n);
  return n;
}

TEST(FloodTest, StatusFloodAndPartialFramesKeepTheDaemonBoundedAndServing) {
  rlimit nofile{};  // this test holds ~400 sockets
  ::getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &nofile);
  const bool as_root = running_as_root();
  // Root's flood must not fill uid 65534's cap; any other uid shares its cap with the normal client: raise it.
  auto daemon = start_daemon(
      "", 2,
      {"--config",
       write_test_config("flood", "[limits]\nmax_connections_per_uid = 1000\nframe_timeout_ms = 600000\n")});
  const std::string socket = daemon.socket_path();
  if (as_root) open_socket_to_everyone(socket);
  auto serve = [&] { return as_root ? run_as({}, [&] { return normal_client(socket); }) : normal_client(socket); };

  ASSERT_EQ(serve(), "") << "before the flood";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long idle = rss_kib(daemon.pid());

  // 50 connections: status requests until the socket takes no more, never a reply read.
  std::vector<wire::UniqueFd> flood;
  wire::Request request;
  request.mutable_status();
  const std::string frame = *wire::encode_frame(request);
  std::string burst;
  while (burst.size() < (64u << 10)) burst += frame;
  for (int i = 0; i < kStatusFlooders; ++i) {
    flood.push_back(connect_to(socket));
    for (size_t sent = 0; sent < (8u << 20);) {  // the daemon stops reading long before 8 MiB
      const ssize_t n = ::send(flood.back().get(), burst.data(), burst.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  }
  // 300 connections: a frame announcing the largest request, all of it but its last byte.
  const std::string partial = std::string{0, 0, 1, 0} + std::string(kMaxRequestBytes - 1, 'p');
  ASSERT_EQ(static_cast<uint8_t>(partial[2]), 1u) << "header 65536, little-endian";
  std::vector<wire::UniqueFd> partials;
  for (int i = 0; i < kPartialFrames; ++i) {
    partials.push_back(connect_to(socket));
    ASSERT_TRUE(wire::send_all(partials.back().get(), partial.data(), partial.size()).ok());
  }
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& fd : partials) {
          if (unread(fd.get()) > 0) return false;
        }
        return true;
      },
      std::chrono::seconds(60)))
      << "the daemon reads every partial frame";

  long peak = rss_kib(daemon.pid());
  EXPECT_EQ(serve(), "") << "during the flood";
  for (int i = 0; i < 20; ++i) {
    peak = std::max(peak, rss_kib(daemon.pid()));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(daemon_status(socket).connections, 1u + kStatusFlooders + kPartialFrames) << "all of them connected";

  flood.clear();
  partials.clear();
  ASSERT_TRUE(eventually([&] { return daemon_status(socket).connections == 1; }, std::chrono::seconds(30)));
  long after = rss_kib(daemon.pid());
  eventually(
      [&] {
        after = rss_kib(daemon.pid());
        return after - idle < 16 * 1024;
      },
      std::chrono::seconds(10));
  std::cout << "daemon RSS: idle " << idle / 1024 << " MiB, peak during the flood " << peak / 1024 << " MiB, after "
            << after / 1024 << " MiB\n";
  EXPECT_LT(peak - idle, 64 * 1024) << "idle " << idle << " KiB, peak " << peak << " KiB";
  EXPECT_LT(after - idle, 16 * 1024) << "idle " << idle << " KiB, after " << after << " KiB";
  EXPECT_EQ(serve(), "") << "after the flood";
}

}  // namespace
}  // namespace batchd::testing
