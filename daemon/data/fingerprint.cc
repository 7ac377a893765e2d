#include "data/fingerprint.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>

#include "batchd/wire/shm_scan.h"
#include "data/regular_file.h"

namespace batchd::daemon {

static_assert(std::endian::native == std::endian::little,
              "fingerprints hash integers in the host's byte order: a big-endian host would compute other digests");

struct FingerprintBuilder::State {
  struct FreeState {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  std::unique_ptr<XXH3_state_t, FreeState> xxh{XXH3_createState()};
};

namespace {

constexpr std::string_view kDomain = "batchd dataset fingerprint v1";

std::string plural(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// One byte range of a file to hash.
struct Range {
  uint64_t offset, bytes;
};

// What to read of a file of `size` bytes given `share` bytes of the budget: all of it, or blocks spread evenly.
std::vector<Range> ranges_of(uint64_t size, uint64_t share, uint64_t block) {
  if (size <= share) return {Range{0, size}};
  const uint64_t blocks = std::max<uint64_t>(2, share / block);
  std::vector<Range> out;
  for (uint64_t j = 0; j < blocks; ++j) out.push_back(Range{j * (size - block) / (blocks - 1), block});
  return out;
}

}  // namespace

FingerprintBuilder::FingerprintBuilder(std::string_view format, SamplePolicy policy)
    : state_(std::make_unique<State>()), policy_(policy) {
  if (!state_->xxh) throw std::bad_alloc();
  XXH3_128bits_reset(state_->xxh.get());
  add_string(kDomain);
  add_string(format);
}

FingerprintBuilder::~FingerprintBuilder() = default;

void FingerprintBuilder::add_u64(uint64_t value) { XXH3_128bits_update(state_->xxh.get(), &value, sizeof(value)); }

void FingerprintBuilder::add_string(std::string_view text) {
  add_u64(text.size());
  XXH3_128bits_update(state_->xxh.get(), text.data(), text.size());
}

void FingerprintBuilder::add_param(std::string_view key, std::string_view value) {
  add_string("param");
  add_string(key);
  add_string(value);
}

void FingerprintBuilder::add_memory(std::string_view what, const void* data, size_t bytes) {
  add_string("memory");  // not `what`: it is for people, and its wording must not change fingerprints
  add_u64(bytes);
  XXH3_128bits_update(state_->xxh.get(), data, bytes);
  if (memory_.empty() || memory_.back().first != what) memory_.emplace_back(what, 0);
  memory_.back().second += bytes;
}

void FingerprintBuilder::add_file(std::string name, std::string path) {
  files_.emplace_back(std::move(name), std::move(path));
}

Result<Fingerprint> FingerprintBuilder::finish(const std::atomic<bool>* cancel) {
  const auto cancelled = [&] { return cancel != nullptr && cancel->load(); };
  const Error cancelled_error(ErrorCode::kUnavailable, "the fingerprint was cancelled");
  // Names and sizes of every file.
  std::vector<uint64_t> sizes(files_.size());
  uint64_t total = 0;
  add_string("files");
  add_u64(files_.size());
  for (size_t i = 0; i < files_.size(); ++i) {
    if (i % 1024 == 0 && cancelled()) return cancelled_error;
    struct stat st {};
    if (::stat(files_[i].second.c_str(), &st) != 0) return posix_error("cannot stat " + files_[i].second, errno);
    sizes[i] = static_cast<uint64_t>(st.st_size);
    total += sizes[i];
    add_string(files_[i].first);
    add_u64(sizes[i]);
  }
  // Content: all of it within the budget, else a sample decided by the sizes alone.
  const bool everything = total <= policy_.content_budget;
  const size_t sampled = everything ? files_.size() : std::min(files_.size(), policy_.max_sampled_files);
  const uint64_t share = everything ? UINT64_MAX : policy_.content_budget / sampled;
  uint64_t read = 0;
  std::vector<uint8_t> buffer;
  add_string("content");
  for (size_t k = 0; k < sampled; ++k) {
    if (cancelled()) return cancelled_error;
    // Spread evenly, the first and last files always included.
    const size_t i = sampled == 1 ? 0 : k * (files_.size() - 1) / (sampled - 1);
    const std::string& path = files_[i].second;
    struct stat st {};
    auto fd = open_regular_file(path, &st);
    if (!fd.ok()) return fd.error();
    if (static_cast<uint64_t>(st.st_size) != sizes[i]) {
      return Error(ErrorCode::kDataError, path + " changed size while the dataset's fingerprint was computed; it "
                                                 "is computed again at the next reload (SIGHUP)");
    }
    add_u64(i);
    for (const Range& r : ranges_of(sizes[i], share, policy_.block_bytes)) {
      buffer.resize(r.bytes);
      BATCHD_RETURN_IF_ERROR(pread_exactly(fd->get(), buffer.data(), r.bytes, r.offset, path));
      add_u64(r.offset);
      add_u64(r.bytes);
      XXH3_128bits_update(state_->xxh.get(), buffer.data(), r.bytes);
      read += r.bytes;
    }
  }

  Fingerprint out;
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state_->xxh.get()));
  char hex[3];
  for (unsigned char byte : canonical.digest) {
    std::snprintf(hex, sizeof(hex), "%02x", byte);
    out.hex += hex;
  }
  std::string files_part;
  if (!files_.empty()) {
    files_part = "the names and sizes of " + plural(files_.size(), "file", "files") + " (" +
                 wire::format_bytes(total) + ")";
    files_part += everything ? " and every byte of them"
                             : " and " + wire::format_bytes(read) + " of their content: " +
                                   plural(sampled, "file", "files") + " spread over the list, up to " +
                                   wire::format_bytes(share) + " of each in blocks of " +
                                   wire::format_bytes(policy_.block_bytes) + " (a change elsewhere that keeps the sizes is "
                                   "not seen)";
  }
  std::string memory_part;
  for (const auto& [what, bytes] : memory_) {
    memory_part += (memory_part.empty() ? "every byte of the " : ", the ") + what + " (" + wire::format_bytes(bytes) +
                   ")";
  }
  out.covers = memory_part + (memory_part.empty() || files_part.empty() ? "" : "; ") + files_part;
  return out;
}

std::vector<std::string> FingerprintBuilder::relative_to_common_directory(const std::vector<std::string>& paths) {
  if (paths.empty()) return {};
  // The longest prefix ending in '/' that every path shares.
  size_t common = paths[0].rfind('/') == std::string::npos ? 0 : paths[0].rfind('/') + 1;
  for (const auto& p : paths) {
    size_t n = 0;
    while (n < common && n < p.size() && p[n] == paths[0][n]) ++n;
    common = std::min(common, n);
    while (common > 0 && paths[0][common - 1] != '/') --common;
  }
  std::vector<std::string> out;
  out.reserve(paths.size());
  for (const auto& p : paths) out.push_back(p.substr(common));
  return out;
}

}  // namespace batchd::daemon
