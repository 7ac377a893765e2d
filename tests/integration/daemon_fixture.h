// daemon_fixture.h — helpers for integration tests: a real batchd on a private socket, /dev/shm inspection, a raw
// protocol connection, and an independent reader of the Fashion-MNIST IDX files.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "batchd.pb.h"
#include "batchd/admin.h"
#include "batchd/client.h"
#include "batchd/wire/fd_passing.h"
#include "batchd/wire/framing.h"
#include "spawn.h"

namespace batchd::testing {

inline tools::SpawnedDaemon start_daemon(const std::string& strategy = "", uint32_t workers = 2,
                                         std::vector<std::string> extra = {}) {
  ::setenv("BATCHD_BIN", BATCHD_BIN_DIR "/batchd", 0);
  tools::SpawnOptions options;
  options.workers = workers;
  options.strategy = strategy;
  options.extra_args = std::move(extra);
  auto daemon = tools::SpawnedDaemon::start(options);
  if (!daemon.ok()) {
    ADD_FAILURE() << daemon.error().message();
    std::abort();
  }
  return std::move(daemon).value();
}

// A test suite that shares one daemon (default strategy, 2 workers) across its tests: daemon() is valid in every
// test of the suite; the daemon is stopped after the last one.
class SharedDaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { daemon_ = new tools::SpawnedDaemon(start_daemon()); }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }
  static const tools::SpawnedDaemon& daemon() { return *daemon_; }

 private:
  static inline tools::SpawnedDaemon* daemon_ = nullptr;
};

// The daemon's status (what batchctl status shows), over an admin connection of its own (batchd/admin.h).
inline DaemonStatus daemon_status(const std::string& socket) {
  auto admin = Admin::connect(socket);
  EXPECT_TRUE(admin.ok()) << admin.error().message();
  if (!admin.ok()) return {};
  auto status = admin->status();
  EXPECT_TRUE(status.ok()) << status.error().message();
  return status.ok() ? std::move(status).value() : DaemonStatus();
}

// The resident set size of process `pid` in KiB (VmRSS in /proc/PID/status), or -1.
inline long rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// The daemon's instance id (what its segment names carry), from its status.
inline std::string instance_of(const tools::SpawnedDaemon& daemon) {
  const std::string id = daemon_status(daemon.socket_path()).instance_id;
  EXPECT_EQ(id.size(), 16u) << "instance id '" << id << "'";
  return id;
}

// The segments in /dev/shm of the daemon instance `instance` ("batchd.<instance>.<stream>"; not its lock file).
inline std::vector<std::string> shm_names_of(const std::string& instance) {
  std::vector<std::string> out;
  const std::string prefix = "batchd." + instance + ".";
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0 && name != prefix + "lock") out.push_back(name);
    }
    ::closedir(d);
  }
  return out;
}
inline std::vector<std::string> shm_names_of(const tools::SpawnedDaemon& daemon) {
  return shm_names_of(instance_of(daemon));
}

// batchctl (build/bin) with `args`, as this process's user: its exit status and its stdout and stderr.
struct Run {
  int exit_code;
  std::string out;
};
inline Run batchctl(const std::string& args) {
  const std::string cmd = std::string(BATCHD_BIN_DIR "/batchctl ") + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  const int status = ::pclose(p);
  return {WEXITSTATUS(status), out};
}

#ifdef BATCHD_SOURCE_DIR
// Runs tests/integration/torchvision_reference.py with `args` (its expected values for a test) in the project venv's
// Python; false, with its output in *why, when it fails (torchvision missing included: the caller FAILs, never skips).
inline bool torchvision_reference(const std::string& args, std::string* why) {
  const std::string cmd = BATCHD_PYTHON " " BATCHD_SOURCE_DIR "/tests/integration/torchvision_reference.py " + args +
                          " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p)) *why += buf;
  const int status = ::pclose(p);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
#endif

// Polls `condition` for up to `timeout`.
template <typename F>
bool eventually(F condition, std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

inline StreamOptions fmnist_options(const std::string& dataset = "fashion-mnist-test", uint32_t batch_size = 100) {
  StreamOptions o;
  o.dataset = dataset;
  o.pipeline = "fmnist";
  o.batch_size = batch_size;
  return o;
}

// Reads one whole stream; returns every index in delivery order (fails the test on an error).
inline std::vector<int64_t> read_all_indices(Stream& stream) {
  std::vector<int64_t> out;
  for (;;) {
    auto batch = stream.next();
    EXPECT_TRUE(batch.ok()) << batch.error().message();
    if (!batch.ok() || !*batch) break;
    const Tensor* index = (*batch)->find("index");
    out.insert(out.end(), index->data_as<int64_t>(), index->data_as<int64_t>() + index->numel());
  }
  return out;
}

// Reads a whole stream; "" if each of its `epochs` epochs (numbered from 0) held every one of `dataset_size`
// indices exactly once, else what went wrong. Thread-safe (no gtest assertions), for reader threads.
inline std::string check_exactly_once(Stream& stream, size_t epochs, size_t dataset_size) {
  std::vector<std::multiset<int64_t>> seen(epochs);
  for (;;) {
    auto batch = stream.next();
    if (!batch.ok()) return batch.error().message();
    if (!*batch) break;
    if ((*batch)->epoch() >= epochs) return "unexpected epoch " + std::to_string((*batch)->epoch());
    const Tensor* index = (*batch)->find("index");
    for (int64_t i = 0; i < index->numel(); ++i) seen[(*batch)->epoch()].insert(index->data_as<int64_t>()[i]);
  }
  for (const auto& e : seen) {
    if (e.size() != dataset_size || std::set<int64_t>(e.begin(), e.end()).size() != dataset_size) {
      return "an epoch of " + std::to_string(e.size()) + " samples is not exactly-once";
    }
  }
  return "";
}

// Runs `body` on a thread and returns its result. If it has not finished within `limit` (a daemon that hangs), the
// test fails and `unstick` runs, which must make the body finish (SIGCONT a stopped worker, stop the daemon, ...).
template <typename F>
auto within(std::chrono::milliseconds limit, const std::string& what, F body, const std::function<void()>& unstick) {
  auto result = std::async(std::launch::async, std::move(body));
  if (result.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << what << " did not happen within " << limit.count() << " ms";
    unstick();
  }
  return result.get();
}

// How reading a stream to its end went: the batches delivered, and the error that ended it (none: StreamEnd).
struct StreamOutcome {
  uint64_t delivered = 0;
  std::optional<Error> error;
};
inline StreamOutcome read_to_end(Stream& stream) {
  StreamOutcome r;
  for (;;) {
    auto batch = stream.next();
    if (!batch.ok()) {
      r.error = batch.error();
      return r;
    }
    if (!*batch) return r;
    ++r.delivered;
  }
}

// An OpenStream request (request id 1) for `batch_size` samples of fashion-mnist-test through fmnist, as a raw
// connection sends it.
inline wire::Request fmnist_open_request(uint32_t batch_size, wire::SharingStrategy strategy = wire::STRATEGY_DEFAULT) {
  wire::Request open;
  open.set_request_id(1);
  auto* o = open.mutable_open_stream();
  o->set_dataset("fashion-mnist-test");
  o->set_pipeline("fmnist");
  o->set_batch_size(batch_size);
  o->set_strategy(strategy);
  return open;
}

// A connection that speaks raw frames, for feeding the daemon malformed input.
class RawConnection {
 public:
  explicit RawConnection(const std::string& path) {
    fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    timeval tv{5, 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  void send_bytes(const std::string& bytes) { ASSERT_TRUE(wire::send_all(fd_.get(), bytes.data(), bytes.size()).ok()); }
  void send_request(const wire::Request& r) { send_bytes(*wire::encode_frame(r)); }
  // false if the daemon has closed the connection (e.g. refused it): no test failure, unlike send_request.
  bool try_send_request(const wire::Request& r) {
    const std::string frame = *wire::encode_frame(r);
    return wire::send_all(fd_.get(), frame.data(), frame.size()).ok();
  }
  void shutdown_write() { ::shutdown(fd_.get(), SHUT_WR); }
  // The next reply, or nullopt at EOF; the fds that came with it are appended to *fds if fds is not null.
  std::optional<wire::Reply> read_reply(std::vector<wire::UniqueFd>* fds = nullptr) {
    std::string payload;
    for (;;) {
      auto more = decoder_.next(&payload);
      if (more.ok() && *more) break;
      char buf[4096];
      std::vector<wire::UniqueFd> received;
      auto n = wire::recv_some(fd_.get(), buf, sizeof(buf), &received, 4);
      if (!n.ok() || *n == 0 || *n == wire::kWouldBlock) return std::nullopt;
      if (fds != nullptr) {
        for (auto& fd : received) fds->push_back(std::move(fd));
      }
      decoder_.feed(buf, *n);
    }
    wire::Reply reply;
    EXPECT_TRUE(reply.ParseFromString(payload));
    return reply;
  }
  // Reads until EOF; returns the replies seen.
  std::vector<wire::Reply> read_until_eof() {
    std::vector<wire::Reply> out;
    while (auto r = read_reply()) out.push_back(*r);
    return out;
  }

 private:
  wire::UniqueFd fd_;
  wire::FrameDecoder decoder_;
};

// Fashion-MNIST read straight from the IDX files with zlib, independently of the daemon's reader.
struct IdxFile {
  std::vector<uint8_t> bytes;
  static IdxFile load(const std::string& path) {
    IdxFile f;
    gzFile g = gzopen(path.c_str(), "rb");
    EXPECT_NE(g, nullptr) << path;
    char buf[1 << 16];
    int n;
    while ((n = gzread(g, buf, sizeof(buf))) > 0) f.bytes.insert(f.bytes.end(), buf, buf + n);
    gzclose(g);
    return f;
  }
  uint8_t pixel(int64_t image, int p) const { return bytes[16 + image * 784 + p]; }
  uint8_t label(int64_t i) const { return bytes[8 + i]; }
};

}  // namespace batchd::testing
