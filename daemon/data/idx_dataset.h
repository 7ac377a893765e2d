// idx_dataset.h — the IDX format of MNIST / Fashion-MNIST (http://yann.lecun.com/exdb/mnist/), raw or gzip.
//
// An image file is big-endian: magic 0x00000803 (uint8, 3 dimensions), count, rows, cols, then count*rows*cols
// bytes; a label file is magic 0x00000801, count, then count bytes. Both files are read fully into memory once
// (47 MB for Fashion-MNIST's training set) and validated: magic, dimensions, matching counts and exact length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace batchd::daemon {

class IdxDataset final : public Dataset {
 public:
  static Result<std::shared_ptr<IdxDataset>> open(const std::string& name, const std::string& images_path,
                                                  const std::string& labels_path);

  const std::string& name() const override { return name_; }
  const char* format() const override { return "idx"; }
  uint64_t size() const override { return labels_.size(); }
  // Every byte of the decompressed images and labels, and the image size; not the file names (the two files have
  // fixed roles, and the same data may be named .gz on one node and raw on another).
  Result<Fingerprint> fingerprint(const std::atomic<bool>* cancel) const override;

  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  // rows*cols uint8 pixels of sample i, row-major. i < size().
  const uint8_t* image(uint64_t i) const { return images_.data() + i * rows_ * cols_; }
  uint8_t label(uint64_t i) const { return labels_[i]; }

 private:
  std::string name_;
  uint32_t rows_ = 0, cols_ = 0;
  std::vector<uint8_t> images_;
  std::vector<uint8_t> labels_;
};

// Reads a whole file, gunzipping it if it is gzip-compressed (zlib's gzread passes raw files through).
Result<std::vector<uint8_t>> read_maybe_gzip(const std::string& path);

}  // namespace batchd::daemon
