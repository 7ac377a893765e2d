// batchctl stats --summary's line (batchctl/batchctl_summary.h): SI formatting, never wider than 80 columns whatever
// the counters hold, and rates over the interval between two samples of the same daemon run.
#include "batchctl_summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace batchd::ctl {
namespace {

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

TEST(SummaryTest, SiKeepsEveryNumberWithinFiveCharacters) {
  EXPECT_EQ(si(0), "0");
  EXPECT_EQ(si(-3), "0");
  EXPECT_EQ(si(std::nan("")), "0");
  EXPECT_EQ(si(7), "7");
  EXPECT_EQ(si(999), "999");
  EXPECT_EQ(si(999.5), "1.00k");
  EXPECT_EQ(si(1234), "1.23k");
  EXPECT_EQ(si(12345), "12.3k");
  EXPECT_EQ(si(123456), "123k");
  EXPECT_EQ(si(999499), "999k");
  EXPECT_EQ(si(999500), "1.00M");
  EXPECT_EQ(si(2.08e6), "2.08M");
  EXPECT_EQ(si(static_cast<double>(std::numeric_limits<uint64_t>::max())), "18.4E");
  EXPECT_EQ(si(1e30), "999E") << "saturates rather than widen";
  for (double v = 0.3; v < 1e25; v *= 1.37) EXPECT_LE(si(v).size(), 5u) << v;
}

TEST(SummaryTest, LineStaysWithinEightyColumnsWithHugeCounters) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  DaemonStatus st;
  st.instance_id = "00000000000000aa";
  st.uptime_seconds = 1;
  st.shm_budget_bytes = kMax;
  st.segment_bytes_of_others = kMax / 2;
  st.streams_of_others = std::numeric_limits<uint32_t>::max();
  StreamStatus s;
  s.open_seconds = 1e-9;
  s.samples_delivered = kMax;
  s.bytes_delivered = kMax;
  s.samples_skipped = kMax;
  s.state = "failed";
  s.stall_seconds = 1e12;  // more than open: clamped to 100%
  for (int i = 0; i < 1000; ++i) st.streams.push_back(s);
  WorkerStatus w;
  w.restarts = kMax / 1000;
  w.busy_seconds = 5;
  w.alive_seconds = 5;
  st.workers.assign(1000, w);
  SegmentStatus seg;
  seg.bytes = kMax / 4;
  st.segments.push_back(seg);

  const std::string line = summary_line(st, nullptr);
  EXPECT_LE(line.size(), 80u) << line;
  EXPECT_EQ(line.size(), summary_header().size()) << "aligned with the header:\n" << summary_header() << "\n" << line;
  EXPECT_LE(summary_header().size(), 80u);
  const auto f = fields(line);
  ASSERT_EQ(f.size(), 10u) << line;
  EXPECT_EQ(f[3], "100.0");
  EXPECT_EQ(f[4], "100.0");
  EXPECT_EQ(f[7], "1.00k") << "1000 failed streams";
}

TEST(SummaryTest, RatesAreOverTheIntervalOfTheSameRun) {
  DaemonStatus before;
  before.instance_id = "00000000000000aa";
  before.uptime_seconds = 10;
  before.shm_budget_bytes = 1'000'000'000;
  StreamStatus s;
  s.stream_id = 3;
  s.state = "running";
  s.open_seconds = 8;
  s.samples_delivered = 1000;
  s.bytes_delivered = 1000 * 100;
  s.stall_seconds = 1;
  before.streams.push_back(s);
  WorkerStatus w;
  w.pid = 40;
  w.busy_seconds = 8;
  w.alive_seconds = 10;
  before.workers = {w, w};

  DaemonStatus now = before;
  now.uptime_seconds = 12;
  now.streams[0].open_seconds = 10;
  now.streams[0].samples_delivered = 5000;  // 4000 in 2 s
  now.streams[0].bytes_delivered = 5000 * 100;
  now.streams[0].stall_seconds = 1.5;       // 0.5 of 2 s
  now.workers[0].busy_seconds = 9;          // 1 of 2 s
  now.workers[0].alive_seconds = 12;
  now.workers[1].pid = 41;                  // replaced: its whole life, 1 of 1 s busy
  now.workers[1].busy_seconds = 1;
  now.workers[1].alive_seconds = 1;
  now.workers[1].restarts = 1;
  SegmentStatus seg;
  seg.bytes = 2'500'000;
  now.segments.push_back(seg);

  auto f = fields(summary_line(now, &before));
  ASSERT_EQ(f.size(), 10u);
  EXPECT_EQ(f[0], "1");
  EXPECT_EQ(f[1], "2.00k");
  EXPECT_EQ(f[2], "200k");
  EXPECT_EQ(f[3], "66.7") << "(1 + 1) busy of (2 + 1) alive seconds";
  EXPECT_EQ(f[4], "25.0");
  EXPECT_EQ(f[6], "2.50M/1.00G");
  EXPECT_EQ(f[9], "1");

  f = fields(summary_line(now, nullptr));  // lifetimes: 5000 samples in 10 s, 1.5 s stalled
  EXPECT_EQ(f[1], "500");
  EXPECT_EQ(f[4], "15.0");

  DaemonStatus other_run = before;  // a restarted daemon: the earlier sample does not apply
  other_run.instance_id = "00000000000000bb";
  f = fields(summary_line(now, &other_run));
  EXPECT_EQ(f[1], "500");

  now.shm_budget_bytes = 0;  // an older daemon: budget unknown
  EXPECT_EQ(fields(summary_line(now, nullptr))[6], "2.50M/?");
}

}  // namespace
}  // namespace batchd::ctl
