// regular_file.h — dataset files are regular files, and nothing else is ever read as one.
//
// A FIFO opened for reading blocks until some process opens it for writing, and reads from a device or socket can
// block forever: a sample "file" of that kind would hang the worker that reads it (and an IDX file, the daemon at
// start-up or on a reload). Scans refuse them with refuse_special_file(); and since a file can be swapped after the
// scan, every read opens with open_regular_file(): O_NONBLOCK (which never blocks on a FIFO, and has no effect on
// reads of a regular file), then fstat S_ISREG before the first read.
//
// Both follow symlinks (a link to a regular file is fine). Something other than a regular file is a kDataError naming
// the path and what it is; a failed open or stat is posix_error's ("cannot open <path>: No such file or directory",
// kNotFound).
//
// A path can also be swapped, after the scan, for a symlink to another file or for another file (where users can
// write a dataset's directory: a root daemon would read a root-only file in its place). So a scan records each
// file's FileId (device and inode: the file itself, whatever path or link led to it) and a read passes it to
// open_regular_file, which refuses a file that is not that one before reading a byte of it.
// Thread-safe (no state).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::daemon {

// Which file a path led to when it was scanned or indexed (stat, following symlinks). {0, 0}: none (it could not be
// stat'ed), which no file matches.
struct FileId {
  uint64_t device = 0;
  uint64_t inode = 0;
  static FileId of(const struct stat& st) {
    return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  }
  bool operator==(const FileId&) const = default;
};

// A file as it is now, for the sample cache (cache/sample_cache.h): an entry made from it is used only while the
// file's size, mtime and inode are still these. inode 0: the file could not be stat'ed, or is no longer the file the
// scan found (never matches an entry).
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool operator==(const FileStamp&) const = default;
};

// stat(path) as a FileStamp, or {} when it fails or the file is not `indexed` (when given).
FileStamp file_stamp(const std::string& path, const FileId* indexed = nullptr);

// For scans: kDataError "<path> is a FIFO, not a regular file …" if `path` exists and is not a regular file; ok
// otherwise (a path that cannot be stat'ed, a dangling symlink say, fails when it is read, per sample, named). Its
// FileId in *id if id is not null ({0, 0} if it cannot be stat'ed).
Status refuse_special_file(const std::string& path, FileId* id = nullptr);

// The file open read-only (close-on-exec), if it is a regular file; its fstat in *st if st is not null (callers
// need not stat it again). With `indexed`, also only if it is that file: else kDataError "<path> changed since it
// was indexed (it is now another file …)", and nothing of it has been read.
Result<wire::UniqueFd> open_regular_file(const std::string& path, struct stat* st = nullptr,
                                         const FileId* indexed = nullptr);

// pread_exactly's parts: 0 once all n bytes are read, else the errno, or -1 at the end of the file (*got: the bytes
// read before); and the Status naming `what` for that failure at byte `at`.
int pread_all(int fd, void* dst, size_t n, uint64_t offset, uint64_t* got);
Status pread_failure(const std::string& what, int err, uint64_t at);

// Reads exactly n bytes at `offset` (pread, EINTR retried). posix_error naming `what` ("cannot read <what>: …");
// reaching the end of the file first is EIO ("Input/output error" would mislead: the message says "end of file").
Status pread_exactly(int fd, void* dst, size_t n, uint64_t offset, const std::string& what);

// The same, with `what` made by describe() only when the read fails: no allocation on the way to the bytes (a
// worker reads every sample this way).
template <typename Describe>
  requires std::is_invocable_r_v<std::string, Describe>
Status pread_exactly(int fd, void* dst, size_t n, uint64_t offset, Describe&& describe) {
  uint64_t got = 0;
  const int err = pread_all(fd, dst, n, offset, &got);
  return err == 0 ? ok_status() : pread_failure(describe(), err, offset + got);
}

}  // namespace batchd::daemon
