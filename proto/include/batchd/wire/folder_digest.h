// folder_digest.h — the digest of an ImageFolder's sample list (FolderRef.digest in batchd_client.proto), computed the
// same way by the daemon (its own listing of a declared imagefolder root), the C++ client and the Python binding (a
// torchvision ImageFolder's .samples).
//
// Definition: XXH3-128, seed 0, over the concatenation, for each sample in dataset order, of its path relative to
// the root (raw bytes, '/'-separated, no leading '/'), one 0x00 byte, its class index in decimal ASCII and one 0x0A
// byte; written as the 32 lowercase hex digits of the canonical (big-endian) hash. A path cannot hold 0x00, so the
// byte stream determines the list.
//
// Move-only value (it owns an XXH3 state); thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace batchd::wire {

class FolderDigest final {
 public:
  FolderDigest();
  ~FolderDigest();
  FolderDigest(FolderDigest&&) noexcept;
  FolderDigest& operator=(FolderDigest&&) noexcept;

  // Appends one sample: its path relative to the root and its class index.
  void add(std::string_view relative_path, uint64_t class_index);
  // The digest of the samples added so far (32 hex digits); add() may go on after it.
  std::string hex() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace batchd::wire
