// worker_progress.h — what a worker is doing, in a page it shares with the daemon.
//
// One page per worker slot, mapped MAP_SHARED|MAP_ANONYMOUS by the daemon before it forks the slot's first worker
// and kept for the daemon's lifetime, so every respawn of that slot inherits the same page. The worker writes the
// stream, batch and sample it is working on before touching each sample; when it dies, the daemon reads which
// sample it was on — the sample that crashed it — and applies the stream's on_error policy to that sample.
//
// An attached worker (a trainer's own process, attached_workers.h) gets its page as a memfd instead
// (ProgressPage::create_shared(): 4096 bytes, sealed against shrinking and growing, so the worker cannot make the
// daemon's mapping fault); the daemon treats what it reads there as a claim to check, never as a trusted value.
#pragma once

#include <atomic>
#include <cstdint>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"
#include "batchd/wire/worker_progress.h"

namespace batchd::daemon {

using wire::WorkerProgress;  // batchd/wire/worker_progress.h: the record both kinds of worker write

class ProgressPage final {
 public:
  static Result<ProgressPage> create();
  // A page in a sealed memfd of kSharedBytes, mapped here; fd() is passed to the attached worker (SCM_RIGHTS).
  static Result<ProgressPage> create_shared();
  static constexpr size_t kSharedBytes = 4096;
  ProgressPage(ProgressPage&& other) noexcept;
  ProgressPage& operator=(ProgressPage&&) = delete;
  ~ProgressPage();

  WorkerProgress* get() const { return page_; }
  int fd() const { return fd_.get(); }  // create_shared(): the memfd; else -1

 private:
  ProgressPage(WorkerProgress* page, size_t bytes, wire::UniqueFd fd = {})
      : page_(page), bytes_(bytes), fd_(std::move(fd)) {}
  WorkerProgress* page_ = nullptr;
  size_t bytes_ = 0;
  wire::UniqueFd fd_;
};

}  // namespace batchd::daemon
