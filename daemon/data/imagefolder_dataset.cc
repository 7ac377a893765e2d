#include "data/imagefolder_dataset.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "batchd/wire/folder_digest.h"
#include "data/regular_file.h"

namespace batchd::daemon {

namespace fs = std::filesystem;

namespace {

// The image extension the file name ends with, as torchvision's has_file_allowed_extension tests it
// (filename.lower().endswith(IMG_EXTENSIONS)): "" if none. A name that is only an extension (".jpg") has one.
std::string image_extension(const fs::path& p) {
  std::string name = p.filename().string();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* ext : {".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}) {
    const std::string_view e(ext);
    if (name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) return std::string(e);
  }
  return "";
}

bool decodable(const std::string& ext) { return ext == ".jpg" || ext == ".jpeg" || ext == ".png"; }

// path relative to root (which it starts with): what FolderRef.digest and the fingerprint name a file by.
std::string relative_to(const std::string& root, const std::string& path) {
  size_t begin = root.size();
  while (begin < path.size() && path[begin] == '/') ++begin;
  return path.substr(begin);
}

FolderListing listing_of(const std::string& root, const std::vector<std::string>& classes,
                         const std::vector<std::string>& paths, const std::vector<int64_t>& labels) {
  FolderListing listing;
  if (char* real = ::realpath(root.c_str(), nullptr)) {  // the daemon's own configured root, never a client's
    listing.real_root = real;
    std::free(real);
  }
  listing.classes = classes;
  listing.class_sizes.assign(classes.size(), 0);
  wire::FolderDigest digest;
  for (size_t i = 0; i < paths.size(); ++i) {
    ++listing.class_sizes[static_cast<size_t>(labels[i])];
    digest.add(relative_to(root, paths[i]), static_cast<uint64_t>(labels[i]));
  }
  listing.samples = paths.size();
  listing.digest = digest.hex();
  return listing;
}

}  // namespace

Result<std::shared_ptr<ImageFolderDataset>> ImageFolderDataset::open(const std::string& name,
                                                                     const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return Error(ErrorCode::kNotFound, "imagefolder root " + root + " does not exist or is not a directory; fix "
                                                                    "datasets." + name + ".root in the config");
  }
  auto ds = std::make_shared<ImageFolderDataset>();
  ds->name_ = name;
  ds->root_ = fs::absolute(root).lexically_normal().string();
  for (const auto& e : fs::directory_iterator(ds->root_, fs::directory_options::follow_directory_symlink, ec)) {
    if (e.is_directory()) ds->classes_.push_back(e.path().filename().string());
  }
  if (ec) return posix_error("cannot list " + root, ec.value());
  std::sort(ds->classes_.begin(), ds->classes_.end());
  if (ds->classes_.empty()) {
    return Error(ErrorCode::kDataError, "imagefolder root " + root + " has no class directories (expected "
                                                                     "root/<class>/<image>.jpg, as torchvision's "
                                                                     "ImageFolder)");
  }
  for (size_t c = 0; c < ds->classes_.size(); ++c) {
    const fs::path dir = fs::path(ds->root_) / ds->classes_[c];
    std::vector<std::tuple<std::string, std::string, FileId>> files;  // (directory, file name, file): os.walk order
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec), end;
         !ec && it != end; it.increment(ec)) {
      if (it->is_directory(ec)) continue;
      const std::string ext = image_extension(it->path());
      if (!ext.empty() && !decodable(ext)) {
        return Error(ErrorCode::kDataError, it->path().string() + ": batchd decodes only .jpg, .jpeg and .png; "
                                                                  "torchvision would index this file, so every "
                                                                  "later sample index would differ. Convert or "
                                                                  "move it");
      }
      if (ext.empty()) continue;
      // A FIFO, device or socket named like an image would block the worker that reads it.
      FileId id;
      if (auto st = refuse_special_file(it->path().string(), &id); !st.ok()) return st.error();
      files.emplace_back(it->path().parent_path().string(), it->path().filename().string(), id);
    }
    if (ec) return posix_error("cannot walk " + dir.string(), ec.value());
    if (files.empty()) {
      return Error(ErrorCode::kDataError, "class directory " + dir.string() + " holds no .jpg/.jpeg/.png image "
                                                                             "(torchvision's ImageFolder refuses "
                                                                             "empty classes too); remove it");
    }
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {  // by (directory, name): unique
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    for (const auto& [d, f, id] : files) {
      ds->paths_.push_back((fs::path(d) / f).string());
      ds->labels_.push_back(static_cast<int64_t>(c));
      ds->files_.push_back(id);
    }
  }
  ds->listing_ = listing_of(ds->root_, ds->classes_, ds->paths_, ds->labels_);
  return ds;
}

Status ImageFolderDataset::read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const {
  *label = labels_[i];
  return read_file(paths_[i], bytes, &files_[i]);
}

Result<Fingerprint> ImageFolderDataset::fingerprint(const std::atomic<bool>* cancel) const {
  FingerprintBuilder builder(format());
  for (const std::string& path : paths_) builder.add_file(relative_to(root_, path), path);  // paths start with root_
  return builder.finish(cancel);
}

Status read_file(const std::string& path, std::vector<uint8_t>* out, const FileId* indexed) {
  // Every failure is a data error of this one sample (the stream's on_error policy applies), naming the file. The
  // file may have been swapped for a FIFO or device since the scan: open_regular_file never blocks on one.
  struct stat st {};
  auto fd = open_regular_file(path, &st, indexed);
  if (!fd.ok()) return Error(ErrorCode::kDataError, fd.error().message());
  out->resize(static_cast<size_t>(st.st_size));
  if (out->empty()) return Error(ErrorCode::kDataError, path + " is empty (0 bytes)");
  auto read = pread_exactly(fd->get(), out->data(), out->size(), 0, path);
  if (!read.ok()) return Error(ErrorCode::kDataError, read.error().message());
  return ok_status();
}

int64_t dataset_classes(const Dataset& dataset) {
  const auto* folder = dynamic_cast<const ImageFolderDataset*>(&dataset);
  return folder != nullptr ? static_cast<int64_t>(folder->classes().size()) : 0;
}

}  // namespace batchd::daemon
