// batchctl_summary.h — `batchctl stats --summary`: the daemon in one line of at most 80 columns, vmstat-style (with
// --watch N, one line per interval under a header repeated every kSummaryHeaderEvery lines).
//
//   STRMS SAMPLES/S  BYTES/S  BUSY% STALL% AHEAD%    SHM/BUDGET  FAIL  SKIP RESTART
//       1      881k    2.78G   94.4   50.4    0.1   3.25M/12.6G     0     0       0
//
// Fields (docs/operations.md, "batchctl stats --summary"):
//   STRMS      open streams: those the caller sees (all of them for an admin) + streams_of_others
//   SAMPLES/S  samples delivered per second, summed over the streams the caller sees
//   BYTES/S    tensor bytes delivered per second, the same streams
//   BUSY%      worker utilisation: the workers' busy time over their alive time, all workers together
//   STALL%     time the streams' clients waited for data, over the streams' open time (the caller's streams)
//   AHEAD%     time every slot of a stream held a finished batch (the daemon waited for the client), the same way
//   SHM/BUDGET bytes of all the daemon's segments / limits.max_shm_bytes as the daemon resolved it ("?": a daemon
//              older than the field)
//   FAIL       the caller's streams in state "failed"; SKIP: samples skipped under on_error = skip, summed over
//              them; RESTART: worker processes replaced since the daemon started (all slots)
// Rates and percentages are over the interval since `previous` (the daemon's own clocks: uptime, open and alive
// seconds), or over each stream's / worker's lifetime without one. A stream that closed during the interval is
// not counted in its rates. Every number is printed with at most 5 characters: SI suffixes k, M, G, T, P, E
// (powers of 1000, 3 significant digits) above 999, percentages as 0.0..100.0; so the line never exceeds 80
// columns, whatever the counters hold.
//
// Pure functions of their arguments; thread-safe.
#pragma once

#include <string>

#include "batchd/admin.h"

namespace batchd::ctl {

// A data line is followed by the header again after this many data lines (a 24-line terminal shows both).
constexpr int kSummaryHeaderEvery = 20;

// `value` in at most 5 characters: "0".."999", then "1.00k".."999k", "1.00M", ... up to "E"; negative or NaN
// prints as "0".
std::string si(double value);

// The column names, aligned with summary_line().
std::string summary_header();
// The one line for `now`, rates since `previous` (nullptr: over lifetimes). No trailing newline.
std::string summary_line(const DaemonStatus& now, const DaemonStatus* previous);

}  // namespace batchd::ctl
