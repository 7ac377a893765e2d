// A stopped or hung worker never freezes the daemon nor stalls a stream: a reload retires a SIGSTOPped idle worker
// without waiting for it (SIGKILL after its exit grace); a worker past its task's deadline is SIGKILLed, logged
// with its stream, batch and samples, and the task redone; a sample that hangs every worker is poison under the
// stream's on_error.
#include <fcntl.h>
#include <signal.h>

#include <fstream>
#include <set>
#include <sstream>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// A daemon whose log (its stdout and stderr) goes to a file, for the tests to read.
struct LoggedDaemon {
  std::string log_path;
  tools::SpawnedDaemon daemon;
  ~LoggedDaemon() {
    (void)daemon.stop();
    std::remove(log_path.c_str());
  }

  std::string log() const {
    std::ifstream in(log_path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The first log line that holds every one of `parts` ("" if none does).
  std::string line_with(const std::vector<std::string>& parts) const {
    std::istringstream lines(log());
    for (std::string line; std::getline(lines, line);) {
      bool all = true;
      for (const auto& p : parts) all = all && line.find(p) != std::string::npos;
      if (all) return line;
    }
    return "";
  }
};

LoggedDaemon start_logged(const std::string& name, uint32_t workers, std::vector<std::string> args) {
  const std::string path = ::testing::TempDir() + name + "-" + std::to_string(::getpid()) + ".log";
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ::dup2(fd, 1);  // the daemon inherits them: spdlog writes to stdout
  ::dup2(fd, 2);
  ::close(fd);
  auto daemon = start_daemon("", workers, std::move(args));
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  return LoggedDaemon{path, std::move(daemon)};
}

// The process state letter from /proc/<pid>/stat ('T' = stopped), or '?' if it is gone.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = all.rfind(')');
  return paren == std::string::npos || paren + 2 >= all.size() ? '?' : all[paren + 2];
}

// SIGCONTs a stopped worker when the test ends, whatever happened (a daemon that waits for it must not hang the
// test run).
struct ContinueOnExit {
  pid_t pid;
  ~ContinueOnExit() { ::kill(pid, SIGCONT); }
};

std::string write_config(const std::string& name) {
  const std::string path = ::testing::TempDir() + name + "-" + std::to_string(::getpid()) + ".toml";
  std::ofstream(path) << "[datasets.fashion-mnist-test]\nformat = \"idx\"\nimages = \"" FMNIST_DIR
                         "/t10k-images-idx3-ubyte.gz\"\nlabels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
  return path;
}

TEST(WatchdogTest, ReloadWithAStoppedIdleWorkerServesEveryoneAtOnceAndKillsIt) {
  const std::string config = write_config("stopped-reload");
  auto logged = start_logged("stopped-reload", 2, {"--config", config});
  const std::string socket = logged.daemon.socket_path();
  const auto before = daemon_status(socket);
  ASSERT_EQ(before.workers.size(), 2u);
  const pid_t stopped = before.workers[0].pid;
  ASSERT_GT(stopped, 0);
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  ContinueOnExit guard{stopped};
  ASSERT_TRUE(eventually([&] { return process_state(stopped) == 'T'; }));

  const auto hup = Clock::now();
  ASSERT_EQ(::kill(logged.daemon.pid(), SIGHUP), 0);
  // Another client is served at once: status shows the replacement in slot 0 while the stopped worker still
  // exists (its exit grace is 5 s), and a new stream is read to its end.
  struct Served {
    bool replaced = false;
    char old_state = '?';
    double seconds = 0;
    std::string stream_error;
  };
  const Served served = within(
      milliseconds(4000), "serving a client during the reload",
      [&] {
        Served s;
        auto admin = Admin::connect(socket);
        if (!admin.ok()) return s;
        s.replaced = eventually(
            [&] {
              auto st = admin->status();
              return st.ok() && st->workers.size() == 2 && st->workers[0].pid > 0 && st->workers[0].pid != stopped;
            },
            milliseconds(3500));
        s.old_state = process_state(stopped);
        s.seconds = std::chrono::duration<double>(Clock::now() - hup).count();
        auto client = Client::connect(socket);
        auto stream = client->open_stream(fmnist_options("fashion-mnist-test", 500));
        s.stream_error = stream.ok() ? check_exactly_once(*stream, 1, 10000) : stream.error().message();
        return s;
      },
      [&] { ::kill(stopped, SIGCONT); });
  EXPECT_TRUE(served.replaced) << "slot 0 was not given a replacement";
  EXPECT_EQ(served.old_state, 'T') << "the client was served only after the stopped worker was gone, "
                                   << served.seconds << " s after SIGHUP";
  EXPECT_LT(served.seconds, 4.0);
  EXPECT_EQ(served.stream_error, "");

  // The stopped worker is killed after its exit grace (SIGKILL ends a stopped process), reaped, and logged.
  EXPECT_TRUE(eventually([&] { return ::kill(stopped, 0) != 0 && errno == ESRCH; }, milliseconds(20000)))
      << "the stopped worker was never killed and reaped (state " << process_state(stopped) << ")";
  EXPECT_NE(logged.line_with({"worker 0 (pid " + std::to_string(stopped) + ")", "did not exit in time", "SIGKILL"}),
            "")
      << logged.log();
  const auto after = daemon_status(socket);
  ASSERT_EQ(after.workers.size(), 2u);
  for (const auto& w : after.workers) {
    EXPECT_GT(w.pid, 0);
    EXPECT_NE(w.pid, stopped);
  }
  std::remove(config.c_str());
}

TEST(WatchdogTest, AStoppedBusyWorkerIsKilledAtItsDeadlineAndItsTaskRedone) {
  auto logged = start_logged("stopped-busy", 2, {"--task-timeout-min-s", "2", "--per-sample-timeout-ms", "1"});
  const std::string socket = logged.daemon.socket_path();
  auto client = Client::connect(socket);
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.shuffle = false;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  std::multiset<int64_t> seen;
  auto take = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) {
      auto batch = stream->next();
      if (!batch.ok()) return batch.error().message();
      if (!*batch) return std::string();
      const Tensor* index = (*batch)->find("index");
      seen.insert(index->data_as<int64_t>(), index->data_as<int64_t>() + index->numel());
    }
    return std::string();
  };
  ASSERT_EQ(take(5), "");
  // Worker 0 is the first idle worker the pool picks, so it holds a task when stopped or gets one right after.
  const pid_t stopped = daemon_status(socket).workers.at(0).pid;
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  ContinueOnExit guard{stopped};
  const auto stop_time = Clock::now();
  const std::string error = within(milliseconds(30000), "reading the stream past the stopped worker",
                                   [&] { return take(1000); }, [&] { ::kill(stopped, SIGCONT); });
  const auto took = Clock::now() - stop_time;
  EXPECT_EQ(error, "");
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 10000u) << "every sample exactly once";
  EXPECT_TRUE(eventually([&] { return ::kill(stopped, 0) != 0 && errno == ESRCH; }, milliseconds(10000)))
      << "the stopped worker was not killed";
  EXPECT_GE(took, milliseconds(1500)) << "the stream went on before the stopped worker's deadline (2 s)";

  const std::string line = logged.line_with({"worker 0 (pid " + std::to_string(stopped) + ")", "past the deadline"});
  ASSERT_NE(line, "") << logged.log();
  EXPECT_NE(line.find("stream " + std::to_string(stream->info().id) + ", batch "), std::string::npos) << line;
  EXPECT_NE(line.find("samples [0, 100) of the batch (dataset indices "), std::string::npos) << line;
  EXPECT_TRUE(line.find("on sample ") != std::string::npos || line.find("not on any sample") != std::string::npos)
      << line;
  const auto st = daemon_status(socket);
  ASSERT_EQ(st.streams.size(), 1u);
  EXPECT_EQ(st.streams[0].worker_deaths, 1u);
  EXPECT_EQ(st.batches_redone, 1u);
  EXPECT_EQ(st.workers.at(0).restarts, 1u);
  EXPECT_GT(st.workers.at(0).pid, 0);
}

constexpr int64_t kHang = 1234;

tools::SpawnedDaemon hang_daemon() {
  return start_daemon("", 2,
                      {"--fault-hang-on-sample", std::to_string(kHang), "--task-timeout-min-s", "2",
                       "--per-sample-timeout-ms", "1"});
}

TEST(WatchdogTest, ASampleThatHangsEveryWorkerIsSkippedAfterItsSecondTimeoutUnderSkip) {
  auto daemon = hang_daemon();
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.shuffle = false;
  o.on_error = OnError::kSkip;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  std::multiset<int64_t> seen;
  size_t skipped = 0;
  const std::string error = within(
      milliseconds(40000), "reading past the hanging sample",
      [&] {
        for (;;) {
          auto batch = stream->next();
          if (!batch.ok()) return batch.error().message();
          if (!*batch) return std::string();
          skipped += (*batch)->skipped();
          const Tensor* index = (*batch)->find("index");
          seen.insert(index->data_as<int64_t>(), index->data_as<int64_t>() + index->numel());
        }
      },
      [&] { (void)daemon.stop(); });
  ASSERT_EQ(error, "");
  EXPECT_EQ(seen.size(), 10000u);
  EXPECT_EQ(seen.count(kHang), 0u) << "the hanging sample is never delivered";
  EXPECT_EQ(seen.count(kHang + 1), 2u) << "it is replaced by the next sample in dataset order";
  EXPECT_EQ(skipped, 1u);
  const auto st = daemon_status(daemon.socket_path());
  ASSERT_EQ(st.streams.size(), 1u);
  EXPECT_EQ(st.streams[0].samples_skipped, 1u);
  EXPECT_EQ(st.streams[0].worker_deaths, 2u) << "two timeouts on the sample make it poison";
  EXPECT_EQ(st.batches_redone, 2u);
}

TEST(WatchdogTest, ASampleThatHangsEveryWorkerFailsTheStreamNamingItUnderFail) {
  auto daemon = hang_daemon();
  auto client = Client::connect(daemon.socket_path());
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.shuffle = false;
  auto stream = client->open_stream(o);
  ASSERT_TRUE(stream.ok());
  const StreamOutcome out = within(
      milliseconds(40000), "the stream's failure",
      [&] { return read_to_end(*stream); },
      [&] { (void)daemon.stop(); });
  ASSERT_TRUE(out.error) << "the stream ended without failing";
  EXPECT_EQ(out.delivered, 12u) << "every batch before the one holding sample 1234 is delivered first";
  EXPECT_EQ(out.error->code(), ErrorCode::kDataError);
  EXPECT_NE(out.error->message().find("sample 1234 of dataset 'fashion-mnist-test' hung 2 workers"),
            std::string::npos)
      << out.error->message();
  EXPECT_NE(out.error->message().find("watchdog"), std::string::npos) << out.error->message();
  EXPECT_NE(out.error->message().find("on_error=skip"), std::string::npos) << out.error->message();
  // Everyone else is served.
  auto other = Client::connect(daemon.socket_path());
  ASSERT_TRUE(other.ok()) << other.error().message();
  auto s = other->open_stream(o);  // batch 0: samples 0..99
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->next().ok());
}

}  // namespace
}  // namespace batchd::testing
