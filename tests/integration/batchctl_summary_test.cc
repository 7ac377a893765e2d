// batchctl stats --summary against a live daemon: one line within 80 columns whose fields agree with a running
// stream, and --watch printing one such line per interval (batchctl/batchctl_summary.h).
#include <google/protobuf/util/json_util.h>

#include <atomic>
#include <cmath>
#include <sstream>

#include "batchctl_summary.h"
#include "daemon_fixture.h"
#include "other_user.h"

namespace batchd::testing {
namespace {

constexpr uint64_t kSampleBytes = 784 * 4 + 8 + 8;  // fmnist: float32 image, int64 label, int64 index
const std::vector<std::string> kColumns = {"STRMS", "SAMPLES/S", "BYTES/S", "BUSY%", "STALL%", "AHEAD%",
                                           "SHM/BUDGET", "FAIL", "SKIP", "RESTART"};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::istringstream in(text);
  for (std::string part; std::getline(in, part, sep);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

// "1.23k" -> 1230.
double from_si(const std::string& s) {
  const std::string suffixes = "kMGTPE";
  const auto at = suffixes.find(s.back());
  return std::stod(s) * (at == std::string::npos ? 1 : std::pow(1000.0, static_cast<double>(at + 1)));
}

// Reads a long stream's batches, a couple of milliseconds apart, until destroyed: the stream keeps running.
class Consumer {
 public:
  explicit Consumer(Stream& stream)
      : thread_([this, &stream] {
          while (!stop_) {
            auto batch = stream.next();
            if (!batch.ok() || !*batch) return;
            ++batches_;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }) {}
  ~Consumer() {
    stop_ = true;
    thread_.join();
  }
  uint64_t batches() const { return batches_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> batches_{0};
  std::thread thread_;
};

StreamOptions long_stream() {
  auto o = fmnist_options("fashion-mnist-test", 100);
  o.num_epochs = 1000;
  return o;
}

// Every line within 80 columns; the header's columns are kColumns and every data line has one field per column.
void expect_summary_shape(const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    EXPECT_LE(line.size(), 80u) << "wider than 80 columns: '" << line << "'";
    if (line.find("STRMS") != std::string::npos) {
      EXPECT_EQ(fields(line), kColumns) << line;
    } else {
      EXPECT_EQ(fields(line).size(), kColumns.size()) << line;
    }
  }
}

TEST(BatchctlSummaryTest, OneLineAgreesWithARunningStreamAndTheBudget) {
  const auto config = write_test_config("summary-budget", "[limits]\nmax_shm_bytes = 50000000\n");
  auto daemon = start_daemon("", 2, {"--config", config});
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(long_stream());
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  Consumer consumer(*stream);
  ASSERT_TRUE(eventually([&] { return consumer.batches() >= 20; }, std::chrono::seconds(30)));

  auto run = batchctl("--socket " + daemon.socket_path() + " stats --summary");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto lines = split(run.out, '\n');
  ASSERT_EQ(lines.size(), 2u) << run.out;
  expect_summary_shape(lines);
  const auto f = fields(lines[1]);
  ASSERT_EQ(f.size(), kColumns.size()) << lines[1];
  EXPECT_EQ(f[0], "1") << "one open stream";
  const double samples_per_s = from_si(f[1]), bytes_per_s = from_si(f[2]);
  EXPECT_GT(samples_per_s, 0) << lines[1];
  // Both rates are rounded to 3 significant digits: their ratio is one sample's bytes within 1%.
  EXPECT_NEAR(bytes_per_s / samples_per_s, static_cast<double>(kSampleBytes), kSampleBytes * 0.01) << lines[1];
  EXPECT_GT(std::stod(f[3]), 0.0) << "the workers made batches: BUSY% > 0";
  for (int i : {3, 4, 5}) {
    EXPECT_GE(std::stod(f[i]), 0.0);
    EXPECT_LE(std::stod(f[i]), 100.0);
  }
  const auto segment_bytes = stream->info().segment_bytes;
  EXPECT_EQ(f[6], ctl::si(static_cast<double>(segment_bytes)) + "/50.0M") << "segment bytes / limits.max_shm_bytes";
  EXPECT_EQ(f[7], "0");
  EXPECT_EQ(f[8], "0");
  EXPECT_EQ(f[9], "0");

  wire::StatusReply json;
  run = batchctl("--socket " + daemon.socket_path() + " stats --json");
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &json).ok()) << run.out;
  EXPECT_EQ(json.shm_budget_bytes(), 50000000u);

  EXPECT_EQ(batchctl("--socket " + daemon.socket_path() + " stats --summary --json").exit_code, 2);
  EXPECT_EQ(batchctl("--socket " + daemon.socket_path() + " stats --summary --count 3").exit_code, 2)
      << "--count needs --watch";
}

TEST(BatchctlSummaryTest, WatchPrintsALinePerIntervalAndTheHeaderEveryScreenful) {
  auto daemon = start_daemon("", 2);
  auto client = Client::connect(daemon.socket_path());
  auto stream = client->open_stream(long_stream());
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  Consumer consumer(*stream);
  ASSERT_TRUE(eventually([&] { return consumer.batches() >= 5; }, std::chrono::seconds(30)));

  const auto start = std::chrono::steady_clock::now();
  auto run = batchctl("--socket " + daemon.socket_path() + " stats --summary --watch 0.3 --count 4");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_LT(elapsed, std::chrono::seconds(30)) << "4 lines 0.3 s apart";
  auto lines = split(run.out, '\n');
  ASSERT_EQ(lines.size(), 5u) << "a header and 4 lines:\n" << run.out;
  expect_summary_shape(lines);
  for (size_t i = 2; i < lines.size(); ++i) {  // rates over the last 0.3 s, the consumer still reading
    EXPECT_GT(from_si(fields(lines[i])[1]), 0) << lines[i];
  }
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  EXPECT_EQ(split(fields(lines[1])[6], '/').back(), ctl::si(static_cast<double>(pages) * page / 2))
      << "max_shm_bytes = 0: half of physical memory";

  run = batchctl("--socket " + daemon.socket_path() + " stats --summary --watch 0.02 --count " +
                 std::to_string(ctl::kSummaryHeaderEvery + 2));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  lines = split(run.out, '\n');
  ASSERT_EQ(lines.size(), ctl::kSummaryHeaderEvery + 4u) << run.out;
  expect_summary_shape(lines);
  EXPECT_EQ(fields(lines[ctl::kSummaryHeaderEvery + 1]), kColumns) << "the header again after a screenful:\n"
                                                                    << run.out;
}

}  // namespace
}  // namespace batchd::testing
