// token_dataset.h — language-model token files (format "tokens"): nanoGPT's train.bin, a raw array of
// little-endian uint16 or uint32 token ids with no header, as np.memmap(path, dtype=np.uint16) reads it.
//
// With N = file size / dtype size tokens and T = seq_len, sample i is the window tokens[i*T : i*T + T + 1]
// (consecutive windows overlap by one token: the last target of one is the first input of the next), and there
// are floor((N - 1) / T) samples (size(), what `batchctl datasets` shows); the tail that does not fill a window is
// never read. A stream may choose another T and random windows (transforms/ops/token_window.h): it reads tokens by
// offset (token()), and this seq_len is only its default.
//
// The file is mapped once, read-only and shared (PROT_READ, MAP_SHARED), when the daemon opens the dataset (start-up,
// SIGHUP). Workers are forked from the daemon and inherit the mapping: every process reads the page cache's one copy
// of the file, and none holds a private one. No madvise hint is given: the kernel's default read-around adapts to
// random faults by itself (it stops reading around after repeated misses), MADV_RANDOM would slow down unshuffled,
// sequential reads, and MADV_WILLNEED would read a file that may be larger than memory.
//
// A file truncated while mapped: a read of a page past its new end raises SIGBUS. Readers call tokens_present()
// once per batch (one stat of the path; workers hold no fd: they close every inherited one) and get a per-sample
// kDataError for windows that are gone (window_missing), which obeys the stream's on_error; only a truncation between that check and
// the read kills the worker, which the daemon counts as a crash on that sample (two such crashes make it a bad
// sample, see docs/reliability.md). A file replaced by rename or unlinked is not noticed by the workers, and need
// not be: the mapping keeps the old file's pages until the dataset is opened again (a reload does that when the
// path names another file or the size changed: changed_on_disk), and no one can truncate a file without a name
// short of holding it open.
//
// Errors at open (the dataset is refused alone, naming the file, the key and the fix): kNotFound for a missing file,
// kDataError for something not a regular file, an empty file, or a size not a multiple of the dtype's, and
// kInvalidArgument for seq_len not smaller than the token count.
// Thread-safe: immutable after open; read concurrently from many processes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "batchd/wire/shared_memory.h"
#include "data/dataset.h"

namespace batchd::daemon {

class TokenDataset final : public Dataset, public TokenWindows {
 public:
  // config: format "tokens", with path, dtype ("uint16" | "uint32") and seq_len as config.cc validated them.
  static Result<std::shared_ptr<TokenDataset>> open(const DatasetConfig& config);

  const std::string& name() const override { return name_; }
  const char* format() const override { return "tokens"; }
  uint64_t size() const override { return windows_; }
  const TokenWindows* tokens() const override { return this; }

  Dtype dtype() const override { return dtype_; }
  uint32_t seq_len() const override { return seq_len_; }
  uint64_t token_count() const override { return tokens_; }  // N
  const void* token(uint64_t offset) const override {
    return mapping_.data() + offset * static_cast<uint64_t>(dtype_);
  }
  uint64_t tokens_present() const override;
  Error window_missing(uint64_t offset, uint64_t length) const override;
  std::string window_name(uint64_t offset, uint64_t length) const override;
  // The path names another file (replaced, e.g. renamed over) or the mapped file's size changed.
  std::string changed_on_disk() const override;
  // dtype, seq_len, the file's size and content as data/fingerprint.h samples it (read with pread from the mapped
  // file, never through the mapping: a truncated file must not raise SIGBUS in the daemon); not its name (the file
  // is the whole dataset). kDataError if the path no longer names the mapped file.
  Result<Fingerprint> fingerprint(const std::atomic<bool>* cancel) const override;

  const std::string& path() const { return path_; }

 private:
  TokenDataset() = default;
  // The size of the mapped file, if the path still names it (same device and inode); false otherwise.
  bool stat_mapped_file(uint64_t* bytes) const;

  std::string name_, path_;
  Dtype dtype_ = Dtype::kUint16;
  uint32_t seq_len_ = 0;
  uint64_t tokens_ = 0, windows_ = 0;
  dev_t dev_ = 0;           // the mapped file's identity, to tell it from a file renamed over its path
  ino_t ino_ = 0;
  wire::Mapping mapping_;  // the whole file, PROT_READ, MAP_SHARED
};

}  // namespace batchd::daemon
