#include "workers/worker_progress.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

namespace batchd::daemon {

Result<ProgressPage> ProgressPage::create() {
  void* p = ::mmap(nullptr, sizeof(WorkerProgress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return posix_error("mmap of a worker progress page", errno);
  return ProgressPage(new (p) WorkerProgress(), sizeof(WorkerProgress));
}

Result<ProgressPage> ProgressPage::create_shared() {
  wire::UniqueFd fd(::memfd_create("batchd-progress", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return posix_error("memfd_create of a worker progress page", errno);
  if (::ftruncate(fd.get(), kSharedBytes) != 0) return posix_error("ftruncate of a worker progress page", errno);
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return posix_error("sealing a worker progress page", errno);
  }
  void* p = ::mmap(nullptr, kSharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return posix_error("mmap of a worker progress page", errno);
  return ProgressPage(new (p) WorkerProgress(), kSharedBytes, std::move(fd));
}

ProgressPage::ProgressPage(ProgressPage&& other) noexcept
    : page_(std::exchange(other.page_, nullptr)), bytes_(other.bytes_), fd_(std::move(other.fd_)) {}

ProgressPage::~ProgressPage() {
  if (page_ != nullptr) ::munmap(page_, bytes_);
}

}  // namespace batchd::daemon
