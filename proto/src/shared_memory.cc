#include "batchd/wire/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <boost/interprocess/shared_memory_object.hpp>
#include <cerrno>
#include <cstring>
#include <utility>

namespace batchd::wire {

namespace bip = boost::interprocess;

namespace {

// posix_fallocate reserves every page now; on tmpfs a shortfall is ENOSPC here rather than SIGBUS on first touch.
Status reserve(int fd, size_t bytes, const std::string& what) {
  int err;
  do {
    err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (err == EINTR);
  if (err == ENOSPC || err == ENOMEM) {
    return Error(ErrorCode::kResourceExhausted,
                 "cannot reserve " + std::to_string(bytes) + " bytes for " + what + ": " + std::strerror(err) +
                     "; /dev/shm (or memory) is too small: free space there, ask for a smaller batch_size or depth, "
                     "or raise its size (docker run --shm-size=8g; mount -o remount,size=8G /dev/shm)");
  }
  if (err != 0) return posix_error("posix_fallocate of " + what, err);
  return ok_status();
}

Error from_interprocess(const bip::interprocess_exception& e, const std::string& what) {
  const int native = e.get_native_error();
  if (native != 0) return posix_error(what, native);
  return Error(ErrorCode::kIo, what + ": " + e.what());
}

}  // namespace

Result<SharedMemory> SharedMemory::create_anonymous(const std::string& debug_name, size_t bytes) {
  UniqueFd fd(::memfd_create(debug_name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return posix_error("memfd_create(" + debug_name + ")", errno);
  // A memfd is born mode 0777: whoever holds a read-only fd could reopen it read-write through /proc/self/fd/N.
  // 0600 leaves that to the creator's uid (and root), as for a named segment.
  if (::fchmod(fd.get(), 0600) != 0) return posix_error("chmod 0600 of segment memfd:" + debug_name, errno);
  BATCHD_RETURN_IF_ERROR(reserve(fd.get(), bytes, "segment memfd:" + debug_name));
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return posix_error("sealing segment memfd:" + debug_name, errno);
  }
  return SharedMemory(std::move(fd), "", bytes, false);
}

Result<SharedMemory> SharedMemory::create_named(const std::string& name, size_t bytes, unsigned mode) {
  UniqueFd fd;
  try {
    bip::permissions perms(mode);
    bip::shared_memory_object shm(bip::create_only, name.c_str(), bip::read_write, perms);
    // Keep our own fd; the Boost object closes its handle when it goes out of scope.
    fd.reset(::fcntl(shm.get_mapping_handle().handle, F_DUPFD_CLOEXEC, 0));
    if (!fd.valid()) {
      const int err = errno;
      bip::shared_memory_object::remove(name.c_str());
      return posix_error("dup of /dev/shm/" + name, err);
    }
  } catch (const bip::interprocess_exception& e) {
    return from_interprocess(e, "cannot create /dev/shm/" + name);
  }
  SharedMemory shm(std::move(fd), name, bytes, true);
  // shm_open applies the umask; the mode we chose is the one we want (a failure unlinks the name with `shm`).
  if (::fchmod(shm.fd(), mode) != 0) return posix_error("chmod of /dev/shm/" + name, errno);
  BATCHD_RETURN_IF_ERROR(reserve(shm.fd(), bytes, "segment /dev/shm/" + name));
  return shm;
}

Result<SharedMemory> SharedMemory::open_named(const std::string& name, bool writable) {
  try {
    bip::shared_memory_object shm(bip::open_only, name.c_str(), writable ? bip::read_write : bip::read_only);
    UniqueFd fd(::fcntl(shm.get_mapping_handle().handle, F_DUPFD_CLOEXEC, 0));
    if (!fd.valid()) return posix_error("dup of /dev/shm/" + name, errno);
    bip::offset_t size = 0;
    shm.get_size(size);
    return SharedMemory(std::move(fd), name, static_cast<size_t>(size), false);
  } catch (const bip::interprocess_exception& e) {
    return from_interprocess(e, "cannot open segment /dev/shm/" + name +
                                    " (was the stream closed, or does the daemon run as another user?)");
  }
}

Result<UniqueFd> SharedMemory::reopen(bool writable) const {
  // Opening /proc/self/fd/N makes a new open file description with its own access mode.
  const std::string path = "/proc/self/fd/" + std::to_string(fd_.get());
  UniqueFd fd(::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC));
  if (!fd.valid()) return posix_error("reopening segment (" + path + ")", errno);
  return fd;
}

Status SharedMemory::remove_named(const std::string& name) {
  if (bip::shared_memory_object::remove(name.c_str())) return ok_status();
  if (errno == ENOENT) return ok_status();
  return posix_error("cannot remove /dev/shm/" + name, errno);
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : fd_(std::move(other.fd_)),
      name_(std::move(other.name_)),
      size_(other.size_),
      owns_name_(std::exchange(other.owns_name_, false)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    unlink_if_owner();
    fd_ = std::move(other.fd_);
    name_ = std::move(other.name_);
    size_ = other.size_;
    owns_name_ = std::exchange(other.owns_name_, false);
  }
  return *this;
}

SharedMemory::~SharedMemory() { unlink_if_owner(); }

void SharedMemory::unlink_if_owner() {
  if (owns_name_ && !name_.empty()) bip::shared_memory_object::remove(name_.c_str());
  owns_name_ = false;
}

Result<Mapping> Mapping::map(int fd, size_t bytes, bool writable, bool populate) {
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  const int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  void* addr = ::mmap(nullptr, bytes, prot, flags, fd, 0);
  if (addr == MAP_FAILED) return posix_error("mmap of a " + std::to_string(bytes) + "-byte segment", errno);
  return Mapping(addr, bytes);
}

Mapping::Mapping(Mapping&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (addr_ != nullptr) ::munmap(addr_, size_);
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Mapping::~Mapping() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

}  // namespace batchd::wire
