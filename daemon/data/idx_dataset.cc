#include "data/idx_dataset.h"

#include <zlib.h>

#include <cerrno>

#include "data/regular_file.h"

namespace batchd::daemon {

namespace {

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

Error corrupt(const std::string& path, const std::string& why) {
  return Error(ErrorCode::kDataError, path + " is not a valid IDX file: " + why +
                                          " (re-install the dataset or fix the path in the config)");
}

}  // namespace

Result<std::vector<uint8_t>> read_maybe_gzip(const std::string& path) {
  // Read at start-up and on a reload, on the event loop: a FIFO in its place must not block it.
  auto fd = open_regular_file(path);
  if (!fd.ok()) return fd.error();
  gzFile f = gzdopen(fd->get(), "rb");
  if (f == nullptr) return posix_error("cannot open " + path, errno ? errno : ENOMEM);
  fd->release();  // gzclose closes it
  gzbuffer(f, 1 << 20);
  std::vector<uint8_t> out;
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    const int n = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int zerr = 0;
      const std::string msg = gzerror(f, &zerr);
      gzclose(f);
      return Error(ErrorCode::kDataError, "cannot read " + path + ": " + msg + " (truncated or corrupt gzip?)");
    }
    if (n == 0) break;
    out.insert(out.end(), chunk.begin(), chunk.begin() + n);
  }
  gzclose(f);
  return out;
}

Result<std::shared_ptr<IdxDataset>> IdxDataset::open(const std::string& name, const std::string& images_path,
                                                     const std::string& labels_path) {
  auto images = read_maybe_gzip(images_path);
  if (!images.ok()) return images.error();
  auto labels = read_maybe_gzip(labels_path);
  if (!labels.ok()) return labels.error();
  const auto& im = *images;
  const auto& lb = *labels;
  if (im.size() < 16 || be32(im.data()) != 0x00000803) {
    return corrupt(images_path, "expected magic 0x00000803 (uint8 images, 3 dimensions)");
  }
  if (lb.size() < 8 || be32(lb.data()) != 0x00000801) {
    return corrupt(labels_path, "expected magic 0x00000801 (uint8 labels, 1 dimension)");
  }
  const uint64_t count = be32(im.data() + 4), rows = be32(im.data() + 8), cols = be32(im.data() + 12);
  if (rows == 0 || cols == 0 || rows > 65536 || cols > 65536) {
    return corrupt(images_path, "implausible image size " + std::to_string(rows) + "x" + std::to_string(cols));
  }
  if (im.size() != 16 + count * rows * cols) {
    return corrupt(images_path, "header says " + std::to_string(count) + " images of " + std::to_string(rows) +
                                    "x" + std::to_string(cols) + " but the file holds " +
                                    std::to_string(im.size() - 16) + " pixel bytes");
  }
  const uint64_t label_count = be32(lb.data() + 4);
  if (lb.size() != 8 + label_count) {
    return corrupt(labels_path, "header says " + std::to_string(label_count) + " labels but the file holds " +
                                    std::to_string(lb.size() - 8));
  }
  if (label_count != count) {
    return Error(ErrorCode::kDataError, images_path + " has " + std::to_string(count) + " images but " +
                                            labels_path + " has " + std::to_string(label_count) +
                                            " labels; they must come from the same split");
  }
  auto ds = std::make_shared<IdxDataset>();
  ds->name_ = name;
  ds->rows_ = static_cast<uint32_t>(rows);
  ds->cols_ = static_cast<uint32_t>(cols);
  ds->images_.assign(im.begin() + 16, im.end());
  ds->labels_.assign(lb.begin() + 8, lb.end());
  return ds;
}

Result<Fingerprint> IdxDataset::fingerprint(const std::atomic<bool>* cancel) const {
  FingerprintBuilder builder(format());
  builder.add_param("rows", std::to_string(rows_));
  builder.add_param("cols", std::to_string(cols_));
  builder.add_memory("decompressed images", images_.data(), images_.size());
  builder.add_memory("labels", labels_.data(), labels_.size());
  return builder.finish(cancel);
}

}  // namespace batchd::daemon
