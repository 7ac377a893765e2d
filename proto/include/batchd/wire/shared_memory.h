// shared_memory.h — RAII owners of a shared-memory object and of a mapping of one.
//
// SharedMemory is a segment's backing object: an fd, plus a /dev/shm name for the file_system strategy. The
// creating side (the daemon) owns the name and unlinks it on destruction; with the anonymous (memfd) kind there is
// no name and nothing can outlive the last fd or mapping. Creation reserves every page with posix_fallocate, so a
// too-small /dev/shm fails here with a clear error instead of a SIGBUS mid-epoch.
//
// Mapping is one mmap() of such an object, unmapped on destruction; `populate` prefaults page tables once.
#pragma once

#include <cstddef>
#include <string>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::wire {

class SharedMemory final {
 public:
  // An unnamed object (memfd_create). `debug_name` shows in /proc/<pid>/fd ("memfd:<debug_name>"). Its size is
  // sealed (F_SEAL_SHRINK | F_SEAL_GROW): no holder of the fd can truncate it under a mapping (SIGBUS). Its mode
  // is 0600, owned by the creator's uid: a holder of a read-only fd of another uid cannot reopen it read-write
  // through /proc/self/fd/N (a memfd is otherwise 0777).
  static Result<SharedMemory> create_anonymous(const std::string& debug_name, size_t bytes);
  // A named /dev/shm object (Boost.Interprocess shared_memory_object), created exclusively with `mode`;
  // `name` has no leading slash ("batchd.123.4"). Unlinked when this object is destroyed.
  static Result<SharedMemory> create_named(const std::string& name, size_t bytes, unsigned mode);
  // Opens an existing named object (client side of file_system), read-only unless `writable`; does not own the name.
  static Result<SharedMemory> open_named(const std::string& name, bool writable = false);
  // Removes a name from /dev/shm; ok if it is already gone.
  static Status remove_named(const std::string& name);

  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();

  int fd() const { return fd_.get(); }
  // A new fd of the same object, read-only unless `writable` (for clients; the size stays sealed either way).
  Result<UniqueFd> reopen(bool writable) const;
  const std::string& name() const { return name_; }  // "" for anonymous objects
  size_t size() const { return size_; }

 private:
  SharedMemory(UniqueFd fd, std::string name, size_t size, bool owns_name)
      : fd_(std::move(fd)), name_(std::move(name)), size_(size), owns_name_(owns_name) {}
  void unlink_if_owner();

  UniqueFd fd_;
  std::string name_;
  size_t size_ = 0;
  bool owns_name_ = false;
};

class Mapping final {
 public:
  // Maps `bytes` of `fd` shared; read-write if `writable`. `populate` = MAP_POPULATE (prefault once).
  static Result<Mapping> map(int fd, size_t bytes, bool writable, bool populate);

  Mapping() = default;
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  char* data() const { return static_cast<char*>(addr_); }
  size_t size() const { return size_; }

 private:
  Mapping(void* addr, size_t size) : addr_(addr), size_(size) {}
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace batchd::wire
