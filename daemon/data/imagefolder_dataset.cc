#include "data/imagefolder_dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "data/regular_file.h"

namespace batchd::daemon {

namespace fs = std::filesystem;

namespace {

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool decodable(const std::string& ext) { return ext == ".jpg" || ext == ".jpeg" || ext == ".png"; }
bool other_torchvision_image(const std::string& ext) {
  return ext == ".bmp" || ext == ".ppm" || ext == ".pgm" || ext == ".tif" || ext == ".tiff" || ext == ".webp";
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
      const std::string ext = lower_extension(it->path());
      if (other_torchvision_image(ext)) {
        return Error(ErrorCode::kDataError, it->path().string() + ": batchd decodes only .jpg, .jpeg and .png; "
                                                                  "torchvision would index this file, so every "
                                                                  "later sample index would differ. Convert or "
                                                                  "move it");
      }
      if (!decodable(ext)) continue;
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
  return ds;
}

Status ImageFolderDataset::read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const {
  *label = labels_[i];
  return read_file(paths_[i], bytes, &files_[i]);
}

Result<Fingerprint> ImageFolderDataset::fingerprint(const std::atomic<bool>* cancel) const {
  FingerprintBuilder builder(format());
  for (const std::string& path : paths_) {  // every path starts with root_ (open() built them from it)
    size_t begin = root_.size();
    while (begin < path.size() && path[begin] == '/') ++begin;
    builder.add_file(path.substr(begin), path);
  }
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

}  // namespace batchd::daemon
