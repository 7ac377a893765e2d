// libFuzzer target: arbitrary bytes from a client, through the daemon's real connection code — frame decoder
// (length bound), Request parse, dispatch (OpenStream, CloseStream, Release, Status) — against a real StreamManager
// with a real dataset (fashion-mnist-test) and real segments, without worker processes. Any crash, leak (ASan) or
// hang is a finding; a well-behaved daemon answers or closes the connection.
//
// Built by setup.sh with clang-14 into build-fuzz/ (BATCHD_FUZZ=ON); run by ctest for a bounded time:
//   build-fuzz/bin/fuzz_control -max_total_time=30 tests/fuzz/corpus
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "config/config.h"
#include "data/dataset.h"
#include "server/server.h"
#include "streams/stream_manager.h"

namespace {

using namespace batchd::daemon;

// The fuzz target runs no worker processes: streams open, and no task is ever assigned.
class NoWorkers final : public Workers {
 public:
  std::optional<size_t> idle_worker() const override { return std::nullopt; }
  bool busy(size_t) const override { return false; }
  void assign(size_t, Task, const batchd::wire::WorkerAttach&, int) override {}
  void detach_stream(uint64_t) override {}
  std::vector<batchd::wire::WorkerInfo> describe() const override { return {}; }
  size_t size() const override { return 0; }
};

struct Daemon {
  Config config;
  DatasetRegistry datasets;
  boost::asio::io_context io{1};
  NoWorkers workers;
  std::unique_ptr<StreamManager> streams;
  std::unique_ptr<Server> server;

  Daemon() {
    spdlog::set_level(spdlog::level::off);
    auto parsed = parse_config(R"(
[daemon]
socket = "/tmp/batchd-fuzz.sock"
[limits]
max_frame_bytes = 65536
max_batch_size = 1024
max_depth = 8
max_segment_bytes = 16777216
max_shm_bytes = 67108864
max_streams_per_connection = 8
[datasets.fashion-mnist-test]
format = "idx"
images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"
)", "<fuzz config>");
    if (!parsed.ok()) std::abort();
    config = *parsed;
    config.socket = "/tmp/batchd-fuzz-" + std::to_string(::getpid()) + ".sock";
    datasets = DatasetRegistry::open_all(config.datasets);
    streams = std::make_unique<StreamManager>(config, datasets, workers, std::move(SegmentInstance::claim()).value());
    auto s = Server::create(io, config, *streams, datasets);
    if (!s.ok()) std::abort();
    server = std::move(s).value();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Daemon* daemon = new Daemon();
  daemon->streams->set_draining(false);  // a Drain in an earlier input must not mask OpenStream in this one
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) std::abort();
  daemon->server->adopt(boost::asio::local::stream_protocol::socket(daemon->io, boost::asio::local::stream_protocol(),
                                                                    sv[0]));
  size_t sent = 0;
  char sink[65536];
  // Feed the input, draining replies so the daemon never blocks, until it is all sent or the daemon hung up.
  for (int rounds = 0; rounds < 10000; ++rounds) {
    if (sent < size) {
      const ssize_t n = ::send(sv[1], data + sent, size - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN) break;
      if (sent == size) ::shutdown(sv[1], SHUT_WR);
    } else if (size == 0) {
      ::shutdown(sv[1], SHUT_WR);
    }
    daemon->io.restart();
    daemon->io.poll();
    const ssize_t r = ::recv(sv[1], sink, sizeof(sink), 0);
    if (r == 0) break;  // the daemon closed the connection
    if (r < 0 && errno != EAGAIN && sent == size && daemon->server->connections() == 0) break;
  }
  ::close(sv[1]);
  for (int i = 0; i < 100 && daemon->server->connections() > 0; ++i) {
    daemon->io.restart();
    daemon->io.poll();
  }
  if (daemon->server->connections() != 0) std::abort();  // a connection outlived its client: a leak
  return 0;
}
