// tar_index.h — the index of one webdataset shard (an uncompressed tar), read from its headers with libarchive.
//
// The shard is read with libarchive's tar reader over the open file (archive_read_open_fd: data is skipped with
// lseek, never read). For each member the reader reports where its header starts and, once the header (with any
// GNU ././@LongLink or PAX extended header blocks before it) is consumed, where its data starts: offsets always come
// from the reader, never from "header + 512". Every member's data must lie inside the file (a truncated shard is
// kDataError naming the file, the member and the offset). Compressed tars, non-tar files and sparse members are
// refused with kDataError naming the file: batchd reads members with pread at offsets into the raw file.
//
// Members are grouped into samples as webdataset's group_by_keys does (webdataset.tariterators):
//   - only regular files count (directories, links, hard links are skipped, as tarfile's isreg()), and names whose
//     first component is "__…__" (webdataset's metadata) are skipped;
//   - a name splits at the first dot of its last component: key = directory + the name up to that dot, extension =
//     the rest, lower-cased (webdataset's regex ^((?:.*/|)[^.]+)[.]([^/]*)$; a name it does not match is skipped);
//   - consecutive members with the same key form one sample; one extension twice in a sample is kDataError (as
//     webdataset raises);
//   - a sample's image is its member with the first of `fields.image` found (in that order, as to_tuple("jpg;png")),
//     its label the `fields.label` member. A sample missing either stays in the index, so sample indices match
//     webdataset's order; it fails when read (webdataset_dataset.h).
// Sample order is member order. Runs on the dataset loader's thread: logs nothing, takes no lock, and returns
// kUnavailable "cancelled" soon after *cancel becomes true.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "batchd/result.h"
#include "data/regular_file.h"

namespace batchd::daemon {

// A file's mtime in ns (st_mtim), as the index and its cache record it. Computed modulo 2^64, so that an mtime
// past the year 2262 (settable with touch -d) wraps the same way everywhere instead of overflowing.
inline int64_t stat_mtime_ns(const struct stat& st) {
  return static_cast<int64_t>(static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000u +
                              static_cast<uint64_t>(st.st_mtim.tv_nsec));
}

// Which extensions hold a sample's image and label (from datasets.<name>.image_field / label_field).
struct SampleFields {
  std::vector<std::string> image;  // lower-case, in order of preference ("jpg", "jpeg", "png")
  std::string label;               // lower-case ("cls")

  // "jpg;jpeg;png" and "cls" (as config.cc validated them: extensions without dots, ';'-separated).
  static SampleFields parse(const std::string& image_field, const std::string& label_field);
};

// A field a sample does not have: its size is kMissingField and its offset the sample's first header.
inline constexpr uint32_t kMissingField = UINT32_MAX;

// The samples of one shard, as parallel arrays (one element per sample).
struct ShardIndex {
  uint64_t file_size = 0;  // bytes, when indexed
  int64_t mtime_ns = 0;    // st_mtim, when indexed (stat_mtime_ns)
  FileId file;             // the file indexed (device, inode): reads refuse any other (regular_file.h)
  std::string keys;        // every sample's key, concatenated
  std::vector<uint32_t> key_end;  // sample j's key is keys[key_end[j - 1] (0 for j = 0), key_end[j])
  std::vector<uint64_t> image_offset, label_offset;  // byte offset of the member's data in the file
  std::vector<uint32_t> image_size, label_size;      // its size in bytes, or kMissingField

  size_t samples() const { return key_end.size(); }
  // Whether the arrays agree in length, keys are in bounds and every present field lies within file_size (a cache
  // entry is checked with this before it is used).
  bool consistent() const;
};

// Indexes the shard at `path` (opened with open_regular_file). Errors name the path.
Result<ShardIndex> index_shard(const std::string& path, const SampleFields& fields,
                               const std::atomic<bool>* cancel = nullptr);
// The same over an open file (a regular file or memfd; read from its current position, which is at its start);
// `name` names it in errors. The fd stays open and is the caller's.
Result<ShardIndex> index_shard_fd(int fd, const std::string& name, const SampleFields& fields,
                                  const std::atomic<bool>* cancel = nullptr);

}  // namespace batchd::daemon
