// batchctl_views.h — how batchctl prints the daemon's status: tables for people, JSON (protobuf's canonical
// mapping, field names as in proto/batchd.proto) for scripts.
#pragma once

#include <google/protobuf/message.h>

#include <optional>
#include <string>

#include "batchd.pb.h"

namespace batchd::ctl {

int print_json(const google::protobuf::Message& message);  // returns the exit status
void print_status(const wire::StatusReply& status);
void print_workers(const wire::StatusReply& status);
void print_streams(const wire::StatusReply& status);
void print_datasets(const wire::StatusReply& status);
// Per-stream and per-worker rates. With `previous` (an earlier sample `interval` seconds before), rates are over
// that interval; without, over each stream's / worker's lifetime.
void print_stats(const wire::StatusReply& now, const std::optional<wire::StatusReply>& previous, double interval);

}  // namespace batchd::ctl
