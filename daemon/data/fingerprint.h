// fingerprint.h — a content fingerprint of a dataset, to tell whether two daemons (one per node) serve the same data
// under the same name: `batchctl datasets --json` prints it, and equal fingerprints on every node mean equal data.
//
// What it is computed from (the stream hashed is length-prefixed throughout, so no two descriptions collide):
//   - the format and the parameters that decide what the samples are (a token file's dtype and seq_len, a
//     webdataset's image and label fields);
//   - in-memory content the dataset already holds, in full (an IDX dataset's decompressed images and labels, a
//     webdataset's index: every sample's key and its members' offsets and sizes);
//   - the dataset's files: each one's name relative to the dataset's root (so the same data mounted at different
//     paths matches; a file that is the whole dataset, a token file, is named by its role instead) and its size;
//   - and their content: every byte when all the files together hold at most content_budget bytes (64 MiB);
//     otherwise a sample of it, chosen from the sizes alone (so two copies of the same data sample the same bytes):
//     at most max_sampled_files (256) files spread evenly over the file list (the first and the last always among
//     them), and of each the whole file if it fits in its share of the budget (content_budget / files sampled), else
//     that share in blocks of block_bytes (64 KiB) spread evenly over the file, its first and last block included.
// Never mtimes, inode numbers, owners, modes or absolute paths, which differ between nodes holding the same data.
//
// What a sampled fingerprint can miss: a change of content that keeps every file's size and falls outside the bytes
// read (a file not sampled, or bytes between the blocks of a sampled one). What it reads is bounded (64 MiB of
// content per dataset, plus one stat per file), so a multi-terabyte dataset costs seconds, not hours; Fingerprint::
// covers says what a given fingerprint read.
//
// The hash is XXH3-128 (libxxhash): fast, and good at telling accidental differences apart — not a cryptographic
// hash (whoever can write the data can also make a colliding copy; no one gains anything by it here).
// Computing one reads files: it runs on the DatasetLoader's thread, never on the event loop, and never logs.
// Not thread-safe (one builder per computation).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon {

struct Fingerprint {
  std::string hex;     // 32 lowercase hex digits
  std::string covers;  // what it was computed from, for people: "every byte of 60 files (2.1 MB)", ...
};

// How much file content a fingerprint reads (the daemon always uses the defaults; tests make them small). Part of the
// definition: daemons with other values compute other fingerprints for datasets larger than the budget.
struct SamplePolicy {
  uint64_t content_budget = 64ull << 20;  // bytes of file content read per dataset, at most
  size_t max_sampled_files = 256;
  uint64_t block_bytes = 64ull << 10;  // content_budget / max_sampled_files must be at least 2 blocks
};

class FingerprintBuilder {
 public:
  explicit FingerprintBuilder(std::string_view format, SamplePolicy policy = {});
  ~FingerprintBuilder();
  FingerprintBuilder(const FingerprintBuilder&) = delete;
  FingerprintBuilder& operator=(const FingerprintBuilder&) = delete;

  // A parameter that decides the samples ("dtype" = "uint16").
  void add_param(std::string_view key, std::string_view value);
  // Content held in memory, hashed in full (length-prefixed, in the order of the calls); `what` names it in covers
  // only ("decompressed images"; consecutive calls with the same `what` are one part of it, their bytes summed).
  void add_memory(std::string_view what, const void* data, size_t bytes);
  // A file of the dataset, in the dataset's order: its name relative to the dataset's root, and where to read it.
  void add_file(std::string name, std::string path);

  // Stats every file added (its size), reads the content described above, and returns the digest. Errors name the
  // file: one that is gone or cannot be read (posix_error), one that is not a regular file or changed size while it
  // was read (kDataError); kUnavailable if *cancel became true (checked between files; cancel may be null).
  Result<Fingerprint> finish(const std::atomic<bool>* cancel = nullptr);

  // The names of `paths` relative to their longest common directory ("/a/x/1.tar", "/a/y/2.tar" -> "x/1.tar",
  // "y/2.tar"; a single path -> its file name).
  static std::vector<std::string> relative_to_common_directory(const std::vector<std::string>& paths);

 private:
  struct State;
  void add_u64(uint64_t value);
  void add_string(std::string_view text);

  std::unique_ptr<State> state_;
  SamplePolicy policy_;
  std::vector<std::pair<std::string, std::string>> files_;  // (name, path)
  std::vector<std::pair<std::string, uint64_t>> memory_;    // what add_memory hashed, for covers
};

}  // namespace batchd::daemon
