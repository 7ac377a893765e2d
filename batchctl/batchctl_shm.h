// batchctl_shm.h — `batchctl shm`: the /dev/shm report (the daemon's live segments when it answers, and what a
// scan of /dev/shm finds either way), and --gc.
#pragma once

#include <optional>
#include <string>

#include "batchd.pb.h"

namespace batchd::ctl {

struct ShmOptions {
  bool gc = false;               // remove orphans (batchd.* whose daemon is gone)
  bool include_foreign = false;  // with gc: also remove torch_* leftovers that no process has open or mapped
  std::string shm_dir = "/dev/shm";
};

// Builds the report; `status` is the daemon's answer, or nullopt with `daemon_error` if it did not answer.
wire::ShmReport shm_report(const std::optional<wire::StatusReply>& status, const std::string& daemon_error,
                           const ShmOptions& options);

void print_shm_report(const wire::ShmReport& report);

}  // namespace batchd::ctl
