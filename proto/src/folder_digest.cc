#include "batchd/wire/folder_digest.h"

#define XXH_INLINE_ALL  // header-only: batchd_wire links no libxxhash (see proto/CMakeLists.txt)
#include <xxhash.h>

#include <cstdio>

namespace batchd::wire {

struct FolderDigest::State {
  struct Free {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  std::unique_ptr<XXH3_state_t, Free> xxh{XXH3_createState()};
};

FolderDigest::FolderDigest() : state_(std::make_unique<State>()) { XXH3_128bits_reset(state_->xxh.get()); }
FolderDigest::~FolderDigest() = default;
FolderDigest::FolderDigest(FolderDigest&&) noexcept = default;
FolderDigest& FolderDigest::operator=(FolderDigest&&) noexcept = default;

void FolderDigest::add(std::string_view relative_path, uint64_t class_index) {
  XXH3_128bits_update(state_->xxh.get(), relative_path.data(), relative_path.size());
  const std::string tail = '\0' + std::to_string(class_index) + '\n';
  XXH3_128bits_update(state_->xxh.get(), tail.data(), tail.size());
}

std::string FolderDigest::hex() const {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state_->xxh.get()));
  std::string out;
  char byte[3];
  for (unsigned char b : canonical.digest) {
    std::snprintf(byte, sizeof(byte), "%02x", b);
    out += byte;
  }
  return out;
}

}  // namespace batchd::wire
