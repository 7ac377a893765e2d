// batchctl_views.h — how batchctl prints the daemon's status (batchd/admin.h): tables for people, JSON
// (batchd::to_json: protobuf's canonical mapping, field names as in proto/batchd_admin.proto) for scripts.
#pragma once

#include <optional>
#include <string>

#include "batchd/admin.h"

namespace batchd::ctl {

// Prints to_json(value) on one line; returns the exit status (1 if it cannot be rendered).
int print_json(const Result<std::string>& json);
void print_status(const DaemonStatus& status);
void print_workers(const DaemonStatus& status);
void print_streams(const DaemonStatus& status);
void print_datasets(const DaemonStatus& status);
// Per-stream and per-worker rates. With `previous` (an earlier sample `interval` seconds before), rates are over
// that interval; without, over each stream's / worker's lifetime.
void print_stats(const DaemonStatus& now, const std::optional<DaemonStatus>& previous, double interval);

// "file_system" or "file_descriptor", as the daemon's --shm-strategy spells them.
const char* strategy_name(SharingStrategy strategy);

}  // namespace batchd::ctl
