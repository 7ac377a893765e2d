#include "streams/folder_match.h"

#include <algorithm>
#include <cctype>

namespace batchd::daemon {

namespace {

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }

// A client's string, quoted for a message (bounded; it is the client's own, echoed back).
std::string quoted(const std::string& s) { return "'" + s.substr(0, 200) + (s.size() > 200 ? "...'" : "'"); }

Status check_ref(const wire::FolderRef& ref) {
  const std::string& root = ref.root();
  if (root.empty() || root[0] != '/' || root.size() > kMaxFolderRootBytes || root.find('\0') != std::string::npos) {
    return invalid("folder.root " + quoted(root) + " is not an absolute path of at most 4096 bytes: send "
                   "os.path.realpath(dataset.root) of the ImageFolder");
  }
  const std::string& d = ref.digest();
  if (d.size() != 32 || !std::all_of(d.begin(), d.end(), [](unsigned char c) { return std::isxdigit(c); })) {
    return invalid("folder.digest " + quoted(d) +
                   " is not 32 hex digits (FolderRef.digest in proto/batchd_client.proto)");
  }
  if (ref.class_sizes_size() != ref.classes_size()) {
    return invalid("folder.class_sizes has " + std::to_string(ref.class_sizes_size()) + " entries for " +
                   std::to_string(ref.classes_size()) + " classes: give one per class");
  }
  uint64_t total = 0;
  for (uint64_t n : ref.class_sizes()) total += n;
  if (total != ref.num_samples()) {
    return invalid("folder.class_sizes sum to " + std::to_string(total) + ", not folder.num_samples (" +
                   std::to_string(ref.num_samples()) + ")");
  }
  return ok_status();
}

const char* kCauses =
    ". Causes: files the daemon does not list (an extension it does not read, such as .bmp or .webp, or a "
    "DatasetFolder with other extensions), or files added, removed or renamed since the daemon listed the folder "
    "(a SIGHUP to the daemon lists it again); or Loader(..., private=True) to start a private daemon over the "
    "folder as it is now";

// Why `ref` is not `name`'s listing, or "" if it is.
std::string listing_difference(const wire::FolderRef& ref, const std::string& name, const FolderListing& mine) {
  const std::string head = "your ImageFolder's root " + quoted(ref.root()) + " is dataset '" + name +
                           "' of this daemon, but ";
  const auto& theirs = ref.classes();
  const size_t classes = std::max<size_t>(theirs.size(), mine.classes.size());
  for (size_t i = 0; i < classes; ++i) {
    const bool here = i < mine.classes.size(), yours = i < static_cast<size_t>(theirs.size());
    if (here && yours && theirs[static_cast<int>(i)] == mine.classes[i]) continue;
    return head + "the class names differ: the daemon has " + std::to_string(mine.classes.size()) +
           " classes, yours " + std::to_string(theirs.size()) + "; class " + std::to_string(i) + " is " +
           (here ? quoted(mine.classes[i]) : "none") + " here and " +
           (yours ? quoted(theirs[static_cast<int>(i)]) : "none") +
           " in yours (the daemon's classes are the sorted sub-directories of its root)";
  }
  if (ref.num_samples() != mine.samples || ref.digest() != mine.digest) {
    std::string where;
    for (size_t c = 0; c < mine.classes.size(); ++c) {
      if (ref.class_sizes(c) == mine.class_sizes[c]) continue;
      where = "; the first class whose count differs is " + quoted(mine.classes[c]) + ": " +
              std::to_string(mine.class_sizes[c]) + " samples here, " + std::to_string(ref.class_sizes(c)) +
              " in yours";
      break;
    }
    if (where.empty()) where = ": the same count in every class, but other file names";
    return head + "its sample list differs: " + std::to_string(ref.num_samples()) + " samples in yours vs " +
           std::to_string(mine.samples) + " in the daemon's listing" + where + kCauses;
  }
  return "";
}

}  // namespace

Result<std::string> match_folder(const wire::FolderRef& ref, const DatasetRegistry& datasets) {
  BATCHD_RETURN_IF_ERROR(check_ref(ref));
  std::string roots, unavailable, difference;
  for (const auto& [name, description] : datasets.describe()) {
    if (description.format != "imagefolder") continue;
    if (description.state != DatasetRegistry::State::kAvailable) {
      unavailable += "; dataset '" + name + "' (imagefolder) is declared but unavailable: " + description.detail;
      continue;
    }
    auto dataset = datasets.find(name);
    const FolderListing* listing = dataset.ok() ? (*dataset)->folder() : nullptr;
    if (listing == nullptr || listing->real_root.empty()) continue;
    roots += (roots.empty() ? "" : ", ") + name + " (" + listing->real_root + ")";
    if (listing->real_root != ref.root()) continue;  // a string comparison: the client's root is never opened
    std::string why = listing_difference(ref, name, *listing);
    if (why.empty()) return name;
    if (difference.empty()) difference = std::move(why);  // two datasets may declare one root: any may match
  }
  if (!difference.empty()) return invalid(difference);
  return Error(ErrorCode::kNotFound,
               "this daemon serves no imagefolder dataset with root " + quoted(ref.root()) +
                   " (your ImageFolder's root, resolved on your side); its imagefolder roots: " +
                   (roots.empty() ? "none" : roots) + unavailable +
                   ". Fixes: declare [datasets.NAME] format = \"imagefolder\" root = \"" + ref.root().substr(0, 200) +
                   "\" in the daemon's config (then SIGHUP it); or Loader(..., private=True) to start a private "
                   "daemon that serves it; if the daemon sees the same files under another path (another mount), "
                   "build the ImageFolder over that path");
}

}  // namespace batchd::daemon
