// worker_progress.h — the progress record a worker keeps in a page it shares with the daemon: which task and which
// sample of it the worker is on. Forked workers share an anonymous page with the daemon; attached workers (a
// trainer's own processes) get a sealed memfd page with their WorkerAttached reply and write the same record at
// offset 0 (lock-free 8-byte atomics: the daemon reads it when the worker dies or misses its deadline, and blames
// `sample` only if stream_id, sequence and begin are the task's and the sample is one of the task's indices).
#pragma once

#include <atomic>
#include <cstdint>

namespace batchd::wire {

struct WorkerProgress {
  std::atomic<uint64_t> stream_id{0};
  std::atomic<uint64_t> sequence{0};
  std::atomic<uint32_t> begin{0};   // the chunk: its first position in the batch
  std::atomic<int64_t> sample{-1};  // -1: between samples
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free);

}  // namespace batchd::wire
