#include "workers/worker_progress.h"

#include <sys/mman.h>

#include <cerrno>
#include <new>
#include <utility>

namespace batchd::daemon {

Result<ProgressPage> ProgressPage::create() {
  void* p = ::mmap(nullptr, sizeof(WorkerProgress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return posix_error("mmap of a worker progress page", errno);
  return ProgressPage(new (p) WorkerProgress());
}

ProgressPage::ProgressPage(ProgressPage&& other) noexcept : page_(std::exchange(other.page_, nullptr)) {}

ProgressPage::~ProgressPage() {
  if (page_ != nullptr) ::munmap(page_, sizeof(WorkerProgress));
}

}  // namespace batchd::daemon
