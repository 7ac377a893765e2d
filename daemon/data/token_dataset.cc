#include "data/token_dataset.h"

#include <sys/stat.h>

#include <bit>
#include <cerrno>

#include "data/regular_file.h"

namespace batchd::daemon {

static_assert(std::endian::native == std::endian::little,
              "token files are little-endian and are read in place: a big-endian host would need a byte swap");

namespace {

const char* dtype_name(TokenWindows::Dtype d) { return d == TokenWindows::Dtype::kUint16 ? "uint16" : "uint32"; }

}  // namespace

Result<std::shared_ptr<TokenDataset>> TokenDataset::open(const DatasetConfig& config) {
  const std::string key = "datasets." + config.name + ".";
  const std::string& path = config.path;
  struct stat st {};
  auto fd = open_regular_file(path, &st);
  if (!fd.ok()) {
    const Error& e = fd.error();
    return Error(e.code(), key + "path: " + e.message() +
                               (e.code() == ErrorCode::kNotFound
                                    ? "; fix the path, or write the token file there (a raw uint16/uint32 array, "
                                      "as nanoGPT's train.bin)"
                                    : ""));
  }

  std::shared_ptr<TokenDataset> ds(new TokenDataset());
  ds->name_ = config.name;
  ds->path_ = path;
  ds->dtype_ = config.dtype == "uint32" ? Dtype::kUint32 : Dtype::kUint16;
  ds->seq_len_ = config.seq_len;
  const auto bytes = static_cast<uint64_t>(st.st_size);
  const uint64_t width = static_cast<uint64_t>(ds->dtype_);
  if (bytes == 0) {
    return Error(ErrorCode::kDataError, path + " is empty (0 bytes): " + key +
                                            "path must name a token array; write the tokens, or fix the path");
  }
  if (bytes % width != 0) {
    return Error(ErrorCode::kDataError,
                 path + " holds " + std::to_string(bytes) + " bytes, not a whole number of " + dtype_name(ds->dtype_) +
                     " tokens (" + std::to_string(width) + " bytes each): the file is truncated or not a token "
                     "file, or " + key + "dtype is wrong (it is \"" + config.dtype + "\")");
  }
  ds->tokens_ = bytes / width;
  if (ds->seq_len_ >= ds->tokens_) {
    return Error(ErrorCode::kInvalidArgument,
                 key + "seq_len = " + std::to_string(ds->seq_len_) + " is not smaller than the " +
                     std::to_string(ds->tokens_) + " tokens in " + path + ": a sample is seq_len + 1 tokens; " +
                     "lower seq_len or use a larger file");
  }
  ds->windows_ = (ds->tokens_ - 1) / ds->seq_len_;
  auto mapping = wire::Mapping::map(fd->get(), bytes, /*writable=*/false, /*populate=*/false);
  if (!mapping.ok()) {
    return Error(mapping.error().code(), "cannot map " + path + " read-only (" + mapping.error().message() +
                                             "): its filesystem must support mmap (else copy the file to a local "
                                             "disk) and the daemon's address space must fit it (ulimit -v, LimitAS)");
  }
  ds->mapping_ = std::move(mapping).value();
  ds->dev_ = st.st_dev;
  ds->ino_ = st.st_ino;
  return ds;  // the fd closes; the mapping keeps the file
}

bool TokenDataset::stat_mapped_file(uint64_t* bytes) const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) return false;
  *bytes = static_cast<uint64_t>(st.st_size);
  return true;
}

std::string TokenDataset::changed_on_disk() const {
  uint64_t bytes = 0;
  if (!stat_mapped_file(&bytes)) return path_ + " was replaced or removed since it was opened";
  if (bytes != mapping_.size()) {
    return path_ + " is now " + std::to_string(bytes) + " bytes (" + std::to_string(mapping_.size()) +
           " when it was opened)";
  }
  return "";
}

Result<Fingerprint> TokenDataset::fingerprint(const std::atomic<bool>* cancel) const {
  uint64_t bytes = 0;
  if (!stat_mapped_file(&bytes)) {
    return Error(ErrorCode::kDataError, path_ + " was replaced or removed since it was opened; reload the daemon "
                                                "(systemctl reload batchd) to serve the file there now");
  }
  FingerprintBuilder builder(format());
  builder.add_param("dtype", dtype_name(dtype_));
  builder.add_param("seq_len", std::to_string(seq_len_));
  builder.add_file("tokens", path_);
  return builder.finish(cancel);
}

uint64_t TokenDataset::tokens_present() const {
  uint64_t bytes = 0;
  if (!stat_mapped_file(&bytes)) return tokens_;  // unlinked or replaced: the mapped file is out of others' reach
  const uint64_t present = bytes / static_cast<uint64_t>(dtype_);
  return present < tokens_ ? present : tokens_;
}

Error TokenDataset::window_missing(uint64_t offset, uint64_t length) const {
  uint64_t bytes = 0;
  const std::string now = stat_mapped_file(&bytes) ? std::to_string(bytes) + " bytes" : "an unknown size";
  return Error(ErrorCode::kDataError,
               window_name(offset, length) + " is no longer in the file: it was truncated to " + now +
                   " after the daemon opened it (" + std::to_string(mapping_.size()) +
                   " bytes); restore the file, or reload the daemon (systemctl reload batchd) to serve it as it is now");
}

std::string TokenDataset::window_name(uint64_t offset, uint64_t length) const {
  return path_ + ": tokens [" + std::to_string(offset) + ", " + std::to_string(offset + length) + ")";
}

}  // namespace batchd::daemon
