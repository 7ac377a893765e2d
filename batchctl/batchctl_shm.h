// batchctl_shm.h — how `batchctl shm` prints the /dev/shm report (batchd::shm_report in batchd/admin.h) for
// people: free space, the daemon's live segments and their clients, orphans, legacy and undecided batchd files,
// foreign files, what --gc removed and why it kept what it kept.
#pragma once

#include "batchd/admin.h"

namespace batchd::ctl {

void print_shm_report(const ShmReport& report);

}  // namespace batchd::ctl
