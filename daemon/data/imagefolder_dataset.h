// imagefolder_dataset.h — torchvision's ImageFolder layout: root/<class>/**/<file>.
//
// Same sample order and labels as torchvision.datasets.ImageFolder (torchvision 0.14), so sample index i names the
// same image in both: classes are the sub-directories of root sorted by name (byte order, as Python sorts str),
// label = position in that order; files are found by walking each class directory (following symlinks), sorted by
// (directory path, file name), as make_dataset's sorted(os.walk(followlinks=True)) and sorted(fnames). A file is an
// image when its lowercased name ends with an image extension, as has_file_allowed_extension tests it (so a file
// named just ".jpg" is one, though std::filesystem sees no extension in it). batchd decodes .jpg, .jpeg and .png;
// a file with one of torchvision's other image extensions (.bmp, .ppm, .pgm, .tif, .tiff, .webp) makes the dataset
// unavailable,
// since skipping it would shift every later index against torchvision's, and so does an image name that is not a
// regular file (a FIFO, device or socket: reading it could block forever; regular_file.h). The index (paths, labels
// and each file's device and inode) is built once, at daemon start-up, and shared by every stream and worker. A
// sample whose path leads to another file when it is read (replaced, or swapped for a symlink to another file) fails
// without being read; a file rewritten in place is read as it is now.
// Known differences from torchvision, each refused rather than served differently: a directory that cannot be read
// (os.walk skips it silently; the open fails naming it), a dangling symlink named like an image (torchvision lists
// it and fails when loading it; the open fails naming it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/regular_file.h"

namespace batchd::daemon {

class ImageFolderDataset final : public Dataset, public ImageSamples {
 public:
  // kNotFound if root does not exist; kDataError if it holds no class directory, a class holds no image, an image
  // has an extension batchd cannot decode, or an image name is not a regular file (each naming the path).
  static Result<std::shared_ptr<ImageFolderDataset>> open(const std::string& name, const std::string& root);

  const std::string& name() const override { return name_; }
  const char* format() const override { return "imagefolder"; }
  uint64_t size() const override { return paths_.size(); }
  const ImageSamples* images() const override { return this; }
  const FolderListing* folder() const override { return &listing_; }
  // Every image's path relative to the root (its class directory included, which decides its label), its size, and
  // content as data/fingerprint.h samples it.
  Result<Fingerprint> fingerprint(const std::atomic<bool>* cancel) const override;
  // Reads the file of sample i (read_file below); the label is its class's position.
  Status read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const override;
  using ImageSamples::sample_name;
  void sample_name(uint64_t i, std::string* out) const override { out->assign(paths_[i]); }
  FileStamp stamp(uint64_t i) const override { return file_stamp(paths_[i], &files_[i]); }

  const std::string& root() const { return root_; }
  const std::string& path(uint64_t i) const { return paths_[i]; }  // absolute
  int64_t label(uint64_t i) const { return labels_[i]; }
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::string name_, root_;
  std::vector<std::string> classes_;
  std::vector<std::string> paths_;
  std::vector<int64_t> labels_;
  std::vector<FileId> files_;  // the file each path led to at the scan
  FolderListing listing_;      // built at the end of open()
};

// Reads a whole regular file into *out (reusing its capacity); never blocks on a FIFO or device put in its place
// (kDataError). With `indexed`, only if the path still leads to that file (kDataError "… changed since it was
// indexed" otherwise, before any read). Errors name the file.
Status read_file(const std::string& path, std::vector<uint8_t>* out, const FileId* indexed = nullptr);

// The classes of a dataset (an imagefolder's class directories), 0 when it does not say (any other format).
int64_t dataset_classes(const Dataset& dataset);

}  // namespace batchd::daemon
