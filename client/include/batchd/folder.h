// folder.h — naming a dataset by a torchvision ImageFolder the trainer built (StreamOptions::folder), instead of by
// the daemon's dataset name.
//
// The daemon serves the stream if one of its declared imagefolder datasets has this root (the realpath of its own
// configured root, compared as a string: the daemon never opens, stats or resolves a path a client names) and the
// same classes and sample list; otherwise open_stream / plan_stream fail with kNotFound (no declared dataset has
// that root: the message names the daemon's imagefolder roots and the fixes) or kInvalidArgument (the root is
// declared but the classes or the listing differ: the message says which and why that happens).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace batchd {

struct FolderRef {
  std::string root;                  // realpath of the ImageFolder's root on this host: absolute, <= 4096 bytes
  std::vector<std::string> classes;  // its classes in class_to_idx order (label i = classes[i])
  uint64_t num_samples = 0;          // its samples
  std::vector<uint64_t> class_sizes; // samples per class, in class order (sum = num_samples)
  std::string digest;                // folder_digest() of its samples
  bool empty() const { return root.empty(); }
};

// FolderRef::digest of a sample list, in dataset order: (path relative to the root, class index) each. 32 lowercase
// hex digits of XXH3-128 over, per sample, the path's bytes, 0x00, the class index in decimal ASCII and 0x0A
// (FolderRef in proto/batchd_client.proto; the Python binding's _batchd.folder_digest is the same function).
std::string folder_digest(const std::vector<std::pair<std::string, uint64_t>>& samples);

}  // namespace batchd
