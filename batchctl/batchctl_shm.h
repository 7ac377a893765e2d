// batchctl_shm.h — how `batchctl shm` prints the /dev/shm report (batchd::shm_report in batchd/admin.h) for
// people: free space, the daemon's live segments and their clients, orphans, foreign files, what --gc removed.
#pragma once

#include "batchd/admin.h"

namespace batchd::ctl {

void print_shm_report(const ShmReport& report);

}  // namespace batchd::ctl
