// worker_progress.h — what a worker is doing, in a page it shares with the daemon.
//
// One page per worker slot, mapped MAP_SHARED|MAP_ANONYMOUS by the daemon before it forks the slot's first worker
// and kept for the daemon's lifetime, so every respawn of that slot inherits the same page. The worker writes the
// stream, batch and sample it is working on before touching each sample; when it dies, the daemon reads which
// sample it was on — the sample that crashed it — and applies the stream's on_error policy to that sample.
#pragma once

#include <atomic>
#include <cstdint>

#include "batchd/result.h"

namespace batchd::daemon {

struct WorkerProgress {
  std::atomic<uint64_t> stream_id{0};
  std::atomic<uint64_t> sequence{0};
  std::atomic<uint32_t> begin{0};   // the chunk: its first position in the batch
  std::atomic<int64_t> sample{-1};  // -1: between samples
};

class ProgressPage final {
 public:
  static Result<ProgressPage> create();
  ProgressPage(ProgressPage&& other) noexcept;
  ProgressPage& operator=(ProgressPage&&) = delete;
  ~ProgressPage();

  WorkerProgress* get() const { return page_; }

 private:
  explicit ProgressPage(WorkerProgress* page) : page_(page) {}
  WorkerProgress* page_ = nullptr;
};

}  // namespace batchd::daemon
