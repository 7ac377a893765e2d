// worker.h — the body of a worker process (forked by WorkerPool; see worker_pool.h).
//
// A worker serves commands from the daemon over its end of a socketpair, one at a time:
//   WorkerAttach (+ the segment fd): map the stream's segment once (MAP_POPULATE) and build its pipeline;
//   WorkerTask: samples [begin, begin + n) of one batch of batch_samples: transform + collate them straight into
//     rows begin .. begin+n-1 of the slot's tensors (from row begin + made: a redo after a bad sample finds the
//     rows before it made), write those rows of the `index` tensor and the slot header
//     (the whole batch's count: every chunk writes the same), answer WorkerDone with the task's begin (and an error
//     naming the sample if one failed);
//   WorkerDetach: unmap the segment (the stream was closed).
// It touches no CUDA, no threads and no sockets other than its channel. It exits when the channel closes (the
// daemon went away) or on SIGTERM/SIGKILL.
#pragma once

#include "data/dataset.h"
#include "transforms/presets/pipeline.h"
#include "workers/worker_progress.h"

namespace batchd::daemon {

// Runs the worker loop on `channel_fd`; returns the process exit code. `progress` is the slot's shared page;
// `faults` is fault injection for tests (off by default).
// `cache`: the daemon's sample cache, shared with every worker (null: none), for streams with a cache point.
int run_worker(int channel_fd, const DatasetRegistry& datasets, uint32_t max_frame_bytes, WorkerProgress* progress,
               FaultInjection faults = {}, SampleCache* cache = nullptr);

}  // namespace batchd::daemon
