#include "data/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace batchd::daemon {

namespace {

const char* kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

Status require_regular(const std::string& path, const struct stat& st) {
  if (S_ISREG(st.st_mode)) return ok_status();
  return Error(ErrorCode::kDataError, path + " is " + kind(st.st_mode) +
                                          ", not a regular file: a dataset holds only regular files (reading "
                                          "anything else could block forever); remove or replace it");
}

}  // namespace

Status refuse_special_file(const std::string& path, FileId* id) {
  struct stat st {};
  if (id != nullptr) *id = FileId{};
  if (::stat(path.c_str(), &st) != 0) return ok_status();  // reported when it is read
  if (id != nullptr) *id = FileId::of(st);
  return require_regular(path, st);
}

Result<wire::UniqueFd> open_regular_file(const std::string& path, struct stat* st, const FileId* indexed) {
  wire::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return posix_error("cannot open " + path, errno);
  struct stat local {};
  if (st == nullptr) st = &local;
  if (::fstat(fd.get(), st) != 0) return posix_error("cannot stat " + path, errno);
  BATCHD_RETURN_IF_ERROR(require_regular(path, *st));
  if (indexed != nullptr && FileId::of(*st) != *indexed) {
    return Error(ErrorCode::kDataError, path + " changed since it was indexed (it is now another file: replaced, or "
                                               "a symbolic link to another); it was not read. Reload batchd "
                                               "(systemctl reload batchd, SIGHUP) to index it again");
  }
  return fd;
}

int pread_all(int fd, void* dst, size_t n, uint64_t offset, uint64_t* got) {
  auto* out = static_cast<char*>(dst);
  for (*got = 0; *got < n;) {
    const ssize_t r = ::pread(fd, out + *got, n - *got, static_cast<off_t>(offset + *got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) return -1;
    *got += static_cast<uint64_t>(r);
  }
  return 0;
}

Status pread_failure(const std::string& what, int err, uint64_t at) {
  if (err > 0) return posix_error("cannot read " + what, err);
  return Error(ErrorCode::kDataError, "cannot read " + what + ": end of file after " + std::to_string(at) + " bytes");
}

Status pread_exactly(int fd, void* dst, size_t n, uint64_t offset, const std::string& what) {
  return pread_exactly(fd, dst, n, offset, [&] { return what; });
}

FileStamp file_stamp(const std::string& path, const FileId* indexed) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  if (indexed != nullptr && !(FileId::of(st) == *indexed)) return {};
  return {static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                               static_cast<uint64_t>(st.st_mtim.tv_nsec)),
          static_cast<uint64_t>(st.st_ino)};
}

}  // namespace batchd::daemon
