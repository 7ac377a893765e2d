// folder_match.h — which declared imagefolder dataset a trainer's torchvision ImageFolder is (OpenStream.folder).
//
// The client's FolderRef is data only: its root is compared as a string with each loaded imagefolder dataset's
// FolderListing::real_root (the realpath of the daemon's own configured root, taken when the dataset opened), never
// opened, stat()ed or resolved here or anywhere else in the daemon (docs/security.md). Then the classes (names, in
// order) and the listing (sample count, samples per class, FolderRef.digest) must equal the daemon's, so sample i
// and label i are the ImageFolder's. Pure: reads the registry, allocates nothing shared; called by plan().
#pragma once

#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "data/dataset.h"

namespace batchd::daemon {

inline constexpr size_t kMaxFolderRootBytes = 4096;  // PATH_MAX

// The name of the dataset `ref` names, or:
//   kInvalidArgument: a malformed reference (root not absolute, over 4096 bytes or holding a NUL; a digest that is
//     not 32 hex digits; class_sizes not one per class, or not summing to num_samples); or the root is a declared
//     dataset's but the listing differs: the class names differ (the first difference named), or the sample counts
//     (N vs M, the first class whose count differs named), or the same counts with other files, each with the causes
//     (an extension the daemon does not list, such as .bmp or .webp; files added or removed since the daemon listed
//     the folder: SIGHUP lists it again).
//   kNotFound: no loaded imagefolder dataset has that root; names the daemon's imagefolder roots, the unavailable
//     ones with why, and the fixes (declare [datasets.NAME] format = "imagefolder" root = "..." in the daemon's
//     config; or Loader(..., private=True) to start a private daemon).
Result<std::string> match_folder(const wire::FolderRef& ref, const DatasetRegistry& datasets);

}  // namespace batchd::daemon
