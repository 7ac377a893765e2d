// batchctl_health.h — `batchctl health [--live]`: the cheap question the probes ask (Admin::health, one small
// request whatever the number of streams, answered for anyone who can connect).
//
// Ready (exit 0): the daemon answers, is not draining and has at least one worker process. --live: answering is
// enough (a draining daemon is alive: restarting it would fail the streams it is finishing). Otherwise exit 1, with
// the reason: on stderr when the daemon does not answer, on stdout ("not ready: ...") when it answers.
#pragma once

#include "batchd/client.h"

namespace batchd::ctl {

int run_health(const ConnectOptions& connect, bool live);

}  // namespace batchd::ctl
