#include "batchctl_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace batchd::ctl {

namespace {

constexpr const char* kFormat = "%5s %9s %8s %6s %6s %6s %13s %5s %5s %7s";

std::string percent(double part, double whole) {
  char buf[16];
  const double p = whole > 0 ? 100.0 * part / whole : 0.0;
  std::snprintf(buf, sizeof(buf), "%.1f", std::isfinite(p) ? std::clamp(p, 0.0, 100.0) : 0.0);
  return buf;
}

// `previous` when it is an earlier sample of the same daemon run, else nullptr (rates over lifetimes).
const DaemonStatus* same_run(const DaemonStatus& now, const DaemonStatus* previous) {
  if (previous == nullptr || previous->instance_id != now.instance_id ||
      previous->uptime_seconds >= now.uptime_seconds) {
    return nullptr;
  }
  return previous;
}

}  // namespace

std::string si(double value) {
  static constexpr char kSuffix[] = " kMGTPE";
  if (!(value > 0)) return "0";  // negative, zero and NaN
  int i = 0;
  while (value >= 999.5 && i < 6) {
    value /= 1000;
    ++i;
  }
  char buf[32];
  if (i == 0) {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  } else {
    std::snprintf(buf, sizeof(buf), value < 9.995 ? "%.2f%c" : value < 99.95 ? "%.1f%c" : "%.0f%c",
                  std::min(value, 999.0), kSuffix[i]);
  }
  return buf;
}

std::string summary_header() {
  char buf[128];
  std::snprintf(buf, sizeof(buf), kFormat, "STRMS", "SAMPLES/S", "BYTES/S", "BUSY%", "STALL%", "AHEAD%", "SHM/BUDGET",
                "FAIL", "SKIP", "RESTART");
  return buf;
}

std::string summary_line(const DaemonStatus& now, const DaemonStatus* previous) {
  previous = same_run(now, previous);
  const double interval = previous ? now.uptime_seconds - previous->uptime_seconds : 0;

  std::map<uint64_t, const StreamStatus*> before;
  if (previous) {
    for (const auto& s : previous->streams) before[s.stream_id] = &s;
  }
  const StreamStatus zero_stream;  // a stream new since `previous`: all of it is in this interval
  double samples_per_s = 0, bytes_per_s = 0, stall = 0, ahead = 0, open = 0;
  uint64_t failed = 0, skipped = 0;
  for (const auto& s : now.streams) {
    const StreamStatus* b = &zero_stream;
    if (auto it = before.find(s.stream_id); it != before.end()) b = it->second;
    const double span = previous ? interval : s.open_seconds;
    if (span > 0) {
      samples_per_s += static_cast<double>(s.samples_delivered - b->samples_delivered) / span;
      bytes_per_s += static_cast<double>(s.bytes_delivered - b->bytes_delivered) / span;
    }
    stall += s.stall_seconds - b->stall_seconds;
    ahead += s.ahead_seconds - b->ahead_seconds;
    open += s.open_seconds - b->open_seconds;
    failed += s.state == "failed" ? 1 : 0;
    skipped += s.samples_skipped;
  }

  const WorkerStatus zero_worker;  // a worker process new since `previous`
  double busy = 0, alive = 0;
  uint64_t restarts = 0;
  for (size_t i = 0; i < now.workers.size(); ++i) {
    const auto& w = now.workers[i];
    const bool same = previous && i < previous->workers.size() && previous->workers[i].pid == w.pid;
    const WorkerStatus& b = same ? previous->workers[i] : zero_worker;
    busy += w.busy_seconds - b.busy_seconds;
    alive += w.alive_seconds - b.alive_seconds;
    restarts += w.restarts;
  }

  uint64_t shm_used = now.segment_bytes_of_others;
  for (const auto& seg : now.segments) shm_used += seg.bytes;
  const std::string shm = si(static_cast<double>(shm_used)) + "/" +
                          (now.shm_budget_bytes > 0 ? si(static_cast<double>(now.shm_budget_bytes)) : "?");

  char buf[128];
  std::snprintf(buf, sizeof(buf), kFormat, si(static_cast<double>(now.streams.size() + now.streams_of_others)).c_str(),
                si(samples_per_s).c_str(), si(bytes_per_s).c_str(), percent(busy, alive).c_str(),
                percent(stall, open).c_str(), percent(ahead, open).c_str(), shm.c_str(),
                si(static_cast<double>(failed)).c_str(), si(static_cast<double>(skipped)).c_str(),
                si(static_cast<double>(restarts)).c_str());
  return buf;
}

}  // namespace batchd::ctl
