#include "batchd/folder.h"

#include "batchd/wire/folder_digest.h"

namespace batchd {

std::string folder_digest(const std::vector<std::pair<std::string, uint64_t>>& samples) {
  wire::FolderDigest digest;
  for (const auto& [path, class_index] : samples) digest.add(path, class_index);
  return digest.hex();
}

}  // namespace batchd
