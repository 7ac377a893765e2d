// index_cache.h — a webdataset's shard indexes kept in a file between runs, so a restart (or a second daemon)
// does not read every shard's headers again.
//
// One file per dataset under daemon.cache_dir: webdataset-<16 hex digits>.idx, the digits a hash (FNV-1a 64) of the
// expanded shard list and the sample fields, so datasets that differ in either never share a file, and the same
// shards and fields declared twice (or by two daemons) do. It holds one entry per shard: the shard's path, its
// size, mtime (ns), device and inode when indexed, and its ShardIndex. An entry is used only for a shard that is
// still the same file (device and inode) of the same size and mtime; the caller checks that, and
// ShardIndex::consistent() (every offset within the shard's size).
//
// Format (host byte order; the file is this host's): "BATCHDWX", u32 version, u32 length + the fields text, u64
// shard count, per shard [u32 length + path, u64 size, i64 mtime_ns, u64 device, u64 inode, u64 samples, u64
// length + keys, u32 key_end[samples], u64 image_offset[samples], u32 image_size[samples], u64
// label_offset[samples], u32 label_size[samples]],
// then the CRC-32 (zlib) of everything before it. A file that is missing, foreign, of another version, or fails
// the CRC or any bound is not used (the shards are indexed again and the file is rewritten): it is never trusted.
//
// Who could have written it matters as much (issue 23, finding 5: a file planted in a cache_dir of mode 1777 had
// shard 0 served with another sample's image and label). The cache is used only in a directory that is the daemon's
// (index_cache_dir_problem); a file is used only if it is the daemon's too: opened with O_NOFOLLOW, a regular file,
// owned by the daemon's uid and writable by no one else. Any other is ignored (the problem says why) and replaced.
// The files list every sample's key, so they are mode 0600 (one others may read is made so when read).
//
// Written atomically: a temporary file in the same directory (O_EXCL, mode 0600), then rename(2). Runs on the
// dataset loader's thread: logs nothing (failures are returned as text) and takes no lock. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "batchd/result.h"
#include "data/tar_index.h"

namespace batchd::daemon {

inline constexpr uint32_t kIndexCacheVersion = 2;  // 2: with each shard's device and inode

// `fields` is the text that identifies the sample fields: image_field + "|" + label_field.
// <dir>/webdataset-<hash>.idx for these shard patterns (the config's `shards`, in order) and fields. The file holds
// an entry per shard (path, size, mtime): expanding the patterns to more or fewer shards keeps the file, and every
// entry that still matches is reused.
std::string index_cache_path(const std::string& dir, const std::vector<std::string>& patterns,
                             const std::string& fields);

// "" if `dir` (daemon.cache_dir) may hold the index cache: no other user's symbolic link leads to it, and it is owned
// by the daemon's uid and writable by no one else (its own primary group aside), or it does not exist (saving then fails, and says so). Else why not, naming
// daemon.cache_dir and the fix; the caller then neither reads nor writes the cache.
std::string index_cache_dir_problem(const std::string& dir);

// At start-up: a daemon.cache_dir reached through another user's symbolic link (foreign_symlink_in) is cleared with
// a warning and never created nor written. Otherwise creates daemon.cache_dir if missing (mode 0700: the daemon's umask is 077; the systemd unit's
// CacheDirectory= makes it). One the daemon cannot write is cleared with a warning (the daemon still serves,
// rebuilding indexes at every start); one that others could write is kept but warned about
// (index_cache_dir_problem: each webdataset's status says why the cache is not used).
void prepare_index_cache_dir(std::string& dir);

struct LoadedIndexCache {
  std::map<std::string, ShardIndex> shards;  // by path
  std::string problem;  // why the file was not used ("" if it was, or if there was none)
};
// Reads the cache file; never fails (a file it cannot use gives no entries and `problem` says why).
LoadedIndexCache load_index_cache(const std::string& file, const std::string& fields);

// Writes the cache file: `paths[i]`'s index is `*indexes[i]`. kIo naming the file on failure (the temporary file is removed).
Status save_index_cache(const std::string& file, const std::string& fields, const std::vector<std::string>& paths,
                        const std::vector<const ShardIndex*>& indexes);

}  // namespace batchd::daemon
