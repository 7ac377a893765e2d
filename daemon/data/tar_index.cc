#include "data/tar_index.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "data/regular_file.h"
#include "data/sample_grouper.h"

namespace batchd::daemon {

namespace {

struct ArchiveFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveFree>;

// Read size of libarchive's fd reader. Member data is skipped with lseek in multiples of it, so a small block reads
// little beyond each header.
constexpr size_t kBlockBytes = 8192;

std::string libarchive_error(archive* a) {
  const char* e = archive_error_string(a);
  return e != nullptr ? e : "no detail";
}

Error not_a_tar(const std::string& name, const std::string& why) {
  return Error(ErrorCode::kDataError, name + " is not a tar file (libarchive: " + why + "); a webdataset shard is an "
                                             "uncompressed tar (tar cf, Python's tarfile, webdataset's TarWriter)");
}

using FilterSupport = int (*)(archive*);

// The compression filters this libarchive implements with a library. Registering a filter it would run through an
// external program (its support function returns ARCHIVE_WARN) would register that program all the same, to be
// exec'ed from the loader thread on a match: those are left out, found once on a throwaway reader (Debian 12's
// libarchive links every one of these; a build without one gives "not a tar file" for that compression).
const std::vector<FilterSupport>& in_process_filters() {
  static const std::vector<FilterSupport> filters = [] {
    std::vector<FilterSupport> ok;
    ArchivePtr probe(archive_read_new());
    for (FilterSupport support : {archive_read_support_filter_gzip, archive_read_support_filter_bzip2,
                                  archive_read_support_filter_xz, archive_read_support_filter_lzma,
                                  archive_read_support_filter_lzip, archive_read_support_filter_zstd,
                                  archive_read_support_filter_lz4, archive_read_support_filter_compress}) {
      if (probe && support(probe.get()) == ARCHIVE_OK) ok.push_back(support);
    }
    return ok;
  }();
  return filters;
}

// A tar reader of `fd` that can tell compression (to refuse it) but never runs an external program: only the
// filters libarchive implements with a library (lzop, grzip and lrzip would exec a decompressor from this thread).
Result<ArchivePtr> open_reader(int fd, const std::string& name) {
  ArchivePtr a(archive_read_new());
  if (!a) return Error(ErrorCode::kResourceExhausted, "cannot index " + name + ": out of memory");
  for (auto support : in_process_filters()) support(a.get());
  archive_read_support_format_tar(a.get());
  // Apple's "._name" members are members like any other (as for tarfile), on every platform.
  archive_read_set_format_option(a.get(), "tar", "mac-ext", nullptr);
  if (archive_read_open_fd(a.get(), fd, kBlockBytes) != ARCHIVE_OK) return not_a_tar(name, libarchive_error(a.get()));
  if (archive_filter_count(a.get()) > 1) {
    return Error(ErrorCode::kDataError, name + " is a compressed tar (" + archive_filter_name(a.get(), 0) +
                                            "); batchd reads members at offsets into the shard file, so shards must "
                                            "be uncompressed: decompress it or write it without compression");
  }
  return a;
}

}  // namespace

SampleFields SampleFields::parse(const std::string& image_field, const std::string& label_field) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  SampleFields f;
  for (size_t start = 0; start <= image_field.size();) {
    const size_t end = std::min(image_field.find(';', start), image_field.size());
    if (end > start) f.image.push_back(lower(image_field.substr(start, end - start)));
    start = end + 1;
  }
  f.label = lower(label_field);
  return f;
}

bool ShardIndex::consistent() const {
  const size_t n = key_end.size();
  if (image_offset.size() != n || label_offset.size() != n || image_size.size() != n || label_size.size() != n) {
    return false;
  }
  if (n == 0 ? !keys.empty() : key_end.back() != keys.size()) return false;
  uint32_t previous = 0;
  for (size_t j = 0; j < n; ++j) {
    if (key_end[j] < previous) return false;
    previous = key_end[j];
    for (auto [offset, size] : {std::pair{image_offset[j], image_size[j]}, std::pair{label_offset[j], label_size[j]}}) {
      if (offset > file_size) return false;
      if (size != kMissingField && size > file_size - offset) return false;
    }
  }
  return true;
}

Result<ShardIndex> index_shard(const std::string& path, const SampleFields& fields, const std::atomic<bool>* cancel) {
  auto fd = open_regular_file(path);
  if (!fd.ok()) return fd.error();
  return index_shard_fd(fd->get(), path, fields, cancel);
}

Result<ShardIndex> index_shard_fd(int fd, const std::string& name, const SampleFields& fields,
                                  const std::atomic<bool>* cancel) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return posix_error("cannot stat " + name, errno);
  ShardIndex out;
  out.file_size = static_cast<uint64_t>(st.st_size);
  out.mtime_ns = stat_mtime_ns(st);
  out.file = FileId::of(st);
  if (out.file_size == 0) return not_a_tar(name, "the file is empty");
  auto reader = open_reader(fd, name);
  if (!reader.ok()) return reader.error();
  archive* a = reader->get();
  SampleGrouper grouper(fields, name, &out);
  for (uint64_t members = 0;; ++members) {
    if (cancel != nullptr && members % 256 == 0 && cancel->load()) {
      return Error(ErrorCode::kUnavailable, "indexing " + name + " was cancelled");
    }
    archive_entry* entry = nullptr;
    const int r = archive_read_next_header(a, &entry);
    if (r == ARCHIVE_EOF) break;
    const int64_t header = archive_read_header_position(a);
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {  // a warning (a name not in the locale's charset) gives the entry
      if (members == 0) return not_a_tar(name, libarchive_error(a));
      return Error(ErrorCode::kDataError, name + ": unreadable tar header at offset " + std::to_string(header) +
                                              " (libarchive: " + libarchive_error(a) +
                                              "); the shard is damaged or truncated: re-copy or rewrite it");
    }
    const char* path = archive_entry_pathname_utf8(entry);
    if (path == nullptr) path = archive_entry_pathname(entry);
    const std::string member = path != nullptr ? path : "";
    const std::string where = name + ": member '" + member + "' (header at offset " + std::to_string(header) + ")";
    if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry) != nullptr) continue;
    if (path == nullptr || member.empty()) {
      return Error(ErrorCode::kDataError, where + " has a name libarchive cannot read; rewrite the shard");
    }
    if (archive_entry_sparse_count(entry) > 0) {
      return Error(ErrorCode::kDataError, where + " is a sparse file, which batchd cannot read at one offset; "
                                                  "rewrite the shard without sparse members (tar without -S)");
    }
    // Where the data starts: what the reader has consumed once it has read every header block of this member.
    const int64_t data = archive_filter_bytes(a, 0);
    const int64_t size = archive_entry_size(entry);
    if (data < header || size < 0 || !archive_entry_size_is_set(entry)) {
      return Error(ErrorCode::kDataError, where + ": libarchive reports no data offset or size; rewrite the shard");
    }
    if (static_cast<uint64_t>(data) > out.file_size ||
        static_cast<uint64_t>(size) > out.file_size - static_cast<uint64_t>(data)) {
      return Error(ErrorCode::kDataError, name + " is truncated: member '" + member + "' (header at offset " +
                                              std::to_string(header) + ") has " + std::to_string(size) +
                                              " bytes of data from offset " + std::to_string(data) +
                                              ", but the file ends at " + std::to_string(out.file_size) +
                                              "; re-copy the shard or rewrite it");
    }
    BATCHD_RETURN_IF_ERROR(grouper.add(member, static_cast<uint64_t>(header), static_cast<uint64_t>(data),
                                       static_cast<uint64_t>(size)));
  }
  grouper.finish();
  return out;
}

}  // namespace batchd::daemon
