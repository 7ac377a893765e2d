// folder_listing.h — what the daemon knows of a declared imagefolder dataset to recognise a trainer's torchvision
// ImageFolder naming it (OpenStream.folder, wire::FolderRef): built once when the dataset opens, from the daemon's
// own config and scan, never from anything a client sent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace batchd::daemon {

struct FolderListing {
  // realpath(3) of the configured root when the dataset opened ("" if it could not be resolved: then no folder
  // reference matches this dataset).
  std::string real_root;
  std::vector<std::string> classes;    // sorted, as torchvision's find_classes; label = position
  std::vector<uint64_t> class_sizes;   // samples per class, in class order
  uint64_t samples = 0;
  std::string digest;                  // FolderRef.digest of the daemon's listing (wire/folder_digest.h)
};

}  // namespace batchd::daemon
