#include "data/webdataset_dataset.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <tuple>

#include "batchd/wire/printable.h"
#include "data/index_cache.h"
#include "data/regular_file.h"
#include "base/shard_spec.h"
#include "data/tar_index.h"
#include "remote/remote_url.h"

namespace batchd::daemon {

namespace {

int64_t mtime_ns(const struct stat& st) { return stat_mtime_ns(st); }

// A label member longer than this is not a class index.
constexpr uint32_t kMaxLabelBytes = 64;

// webdataset's cls field: int(data) — an optionally signed decimal, ASCII whitespace around it.
bool parse_label(std::string_view text, int64_t* out) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (text.empty() || text.front() < '0' || text.front() > '9') return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::shared_ptr<WebDatasetDataset> WebDatasetDataset::make(const DatasetConfig& c, const SampleFields& fields) {
  auto ds = std::make_shared<WebDatasetDataset>();
  ds->name_ = c.name;
  ds->patterns_ = c.shards;
  for (const auto& ext : fields.image) ds->image_exts_ += (ds->image_exts_.empty() ? "." : ", .") + ext;
  ds->label_ext_ = "." + fields.label;
  return ds;
}

Result<std::shared_ptr<WebDatasetDataset>> WebDatasetDataset::open(const DatasetConfig& c, const OpenContext& ctx) {
  if (std::any_of(c.shards.begin(), c.shards.end(), [](const std::string& p) { return remote::is_remote(p); })) {
    return open_remote(c, ctx);  // webdataset_remote.cc
  }
  const std::string key = "datasets." + c.name + ".shards";
  auto shards = expand_shards(c.shards, key);
  if (!shards.ok()) return shards.error();
  const size_t n = shards->size();
  LoadProgress* progress = ctx.progress;
  if (progress != nullptr) progress->total = n;
  const std::atomic<bool>* cancel = progress != nullptr ? &progress->cancel : nullptr;
  const SampleFields fields = SampleFields::parse(c.image_field, c.label_field);
  const std::string fields_text = c.image_field + "|" + c.label_field;

  auto ds = make(c, fields);
  OpenStats& stats = ds->stats_;
  stats.shards = n;
  LoadedIndexCache cache;
  bool use_cache = false;
  if (!ctx.cache_dir.empty()) {
    // Keyed by the patterns, not their expansion: a glob that gains a shard keeps its file, and the shards already
    // in it (same path and file, same size and mtime) are not read again.
    stats.cache_file = index_cache_path(ctx.cache_dir, c.shards, fields_text);
    stats.cache_problem = index_cache_dir_problem(ctx.cache_dir);
    use_cache = stats.cache_problem.empty();
    if (use_cache) cache = load_index_cache(stats.cache_file, fields_text);
    if (use_cache) stats.cache_problem = cache.problem;
  }

  std::vector<ShardIndex> all(n);
  for (size_t i = 0; i < n; ++i) {
    if (cancel != nullptr && cancel->load()) return Error(ErrorCode::kUnavailable, "indexing was cancelled");
    const std::string& path = (*shards)[i];
    struct stat st {};
    auto cached = cache.shards.find(path);
    if (cached != cache.shards.end() && ::stat(path.c_str(), &st) == 0 && cached->second.file == FileId::of(st) &&
        cached->second.file_size == static_cast<uint64_t>(st.st_size) && cached->second.mtime_ns == mtime_ns(st)) {
      all[i] = std::move(cached->second);
      ++stats.from_cache;
    } else {
      auto indexed = index_shard(path, fields, cancel);
      if (!indexed.ok()) {
        if (cancel != nullptr && cancel->load()) return Error(ErrorCode::kUnavailable, "indexing was cancelled");
        return Error(indexed.error().code(), indexed.error().message() + " (shard " + std::to_string(i + 1) +
                                                 " of " + std::to_string(n) + " in " + key + ")");
      }
      all[i] = std::move(indexed).value();
      ++stats.indexed;
    }
    if (progress != nullptr) progress->done = i + 1;
  }
  if (use_cache && (stats.indexed > 0 || cache.shards.size() != n)) {
    std::vector<const ShardIndex*> indexes;
    for (const auto& s : all) indexes.push_back(&s);
    if (auto saved = save_index_cache(stats.cache_file, fields_text, *shards, indexes); !saved.ok()) {
      stats.cache_problem += (stats.cache_problem.empty() ? "" : "; ") + saved.error().message() +
                             " (the shards will be indexed again at the next start; make daemon.cache_dir "
                             "writable)";
    }
  }

  const uint64_t samples = ds->assemble(all, *shards);
  if (samples == 0) {
    return Error(ErrorCode::kDataError, "the " + std::to_string(n) + " shard(s) of " + key + " hold no sample "
                                        "(no member named <key>.<extension>); check the pattern");
  }
  ds->describe(samples);
  return ds;
}

void WebDatasetDataset::describe(uint64_t samples) {
  const OpenStats& stats = stats_;
  const size_t n = stats.shards;
  summary_ = std::to_string(samples) + " samples in " + std::to_string(n) + (is_remote() ? " remote" : "") +
             (n == 1 ? " shard (" : " shards (") +
             (stats.cache_file.empty() ? "indexed; no cache_dir"
                                       : std::to_string(stats.from_cache) + " from the index cache, " +
                                             std::to_string(stats.indexed) + " indexed") + ")";
  if (stats.without_image + stats.without_label > 0) {
    summary_ += "; " + std::to_string(stats.without_image) + " without an image (" + image_exts_ + ") and " +
                std::to_string(stats.without_label) + " without a label (" + label_ext_ +
                "): they fail when read (on_error applies)";
  }
  if (!stats.cache_problem.empty()) summary_ += "; index cache: " + stats.cache_problem;
  if (!stats.remote_warning.empty()) summary_ += "; warning: " + stats.remote_warning;
}

uint64_t WebDatasetDataset::assemble(std::vector<ShardIndex>& all, const std::vector<std::string>& paths) {
  OpenStats& stats = stats_;
  uint64_t samples = 0, key_bytes = 0;
  for (const auto& s : all) {
    samples += s.samples();
    key_bytes += s.keys.size();
  }
  if (samples == 0) return 0;
  keys_.reserve(key_bytes);
  for (auto* v : {&key_end_, &image_offset_, &label_offset_}) v->reserve(samples);
  for (auto* v : {&image_size_, &label_size_}) v->reserve(samples);
  for (size_t i = 0; i < all.size(); ++i) {
    ShardIndex& s = all[i];
    shard_path_.push_back(paths[i]);
    shard_size_.push_back(s.file_size);
    shard_mtime_ns_.push_back(s.mtime_ns);
    shard_file_.push_back(s.file);
    shard_first_.push_back(key_end_.size());
    const uint64_t base = keys_.size();
    keys_ += s.keys;
    for (uint32_t end : s.key_end) key_end_.push_back(base + end);
    image_offset_.insert(image_offset_.end(), s.image_offset.begin(), s.image_offset.end());
    label_offset_.insert(label_offset_.end(), s.label_offset.begin(), s.label_offset.end());
    image_size_.insert(image_size_.end(), s.image_size.begin(), s.image_size.end());
    label_size_.insert(label_size_.end(), s.label_size.begin(), s.label_size.end());
    stats.without_image += static_cast<uint64_t>(std::count(s.image_size.begin(), s.image_size.end(), kMissingField));
    stats.without_label += static_cast<uint64_t>(std::count(s.label_size.begin(), s.label_size.end(), kMissingField));
    s = ShardIndex{};  // release as we go
  }
  shard_first_.push_back(samples);

  return samples;
}

size_t WebDatasetDataset::shard_of(uint64_t i) const {
  return static_cast<size_t>(std::upper_bound(shard_first_.begin(), shard_first_.end(), i) - shard_first_.begin()) -
         1;
}

void WebDatasetDataset::sample_name(uint64_t i, std::string* out) const {
  const uint64_t begin = i == 0 ? 0 : key_end_[i - 1];
  const size_t shard = shard_of(i);
  out->assign(is_remote() ? remote_url_[shard] : shard_path_[shard]).append(": sample '");
  // The key is the shard's member name, which whoever made the shard chose: a newline or an escape sequence in it
  // would forge a log line or drive batchctl's terminal (docs/security.md, third review), so it is escaped.
  const std::string_view key = std::string_view(keys_).substr(begin, key_end_[i] - begin);
  const bool plain = std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '\\'; });
  if (plain) {
    out->append(key);  // no temporary: the name is made for every sample a worker reads
  } else {
    out->append(wire::printable(key));
  }
  out->append("'");
}

FileStamp WebDatasetDataset::stamp(uint64_t i) const {
  const size_t shard = shard_of(i);
  if (is_remote()) return remote_stamp(shard);
  const FileStamp now = file_stamp(shard_path_[shard], &shard_file_[shard]);
  if (now.size != shard_size_[shard] || now.mtime_ns != shard_mtime_ns_[shard]) return {};
  return now;
}

Status WebDatasetDataset::read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const {
  const size_t shard = shard_of(i);
  const std::string& path = shard_path_[shard];
  auto fail = [&](const std::string& what) { return Error(ErrorCode::kDataError, sample_name(i) + " " + what); };
  // Pointers, not copies: this runs for every sample a worker reads (no allocation on the way to the bytes).
  for (auto [size, offset, what] : {std::tuple{image_size_[i], image_offset_[i], &image_exts_},
                                    std::tuple{label_size_[i], label_offset_[i], &label_ext_}}) {
    if (size == kMissingField) {
      return fail("(its first member's header is at offset " + std::to_string(offset) + ") has no " + *what +
                  " member; add it to the shard, or set on_error = \"skip\"");
    }
  }
  struct stat st {};
  // The file indexed, else nothing of it is read. A remote shard's local copy is the shard store's (its name says
  // which URL, ETag and size it holds).
  auto fd = open_regular_file(path, &st, is_remote() ? nullptr : &shard_file_[shard]);
  if (!fd.ok() && is_remote()) return fail(remote_missing(shard, fd.error()));
  if (!fd.ok()) return fail("cannot be read: " + fd.error().message());
  if (static_cast<uint64_t>(st.st_size) != shard_size_[shard] ||
      (!is_remote() && mtime_ns(st) != shard_mtime_ns_[shard])) {
    return fail("cannot be read: the shard changed (size or mtime) since it was indexed; reload batchd "
                "(systemctl reload batchd, SIGHUP) to index it again");
  }
  auto pread_all = [&](void* dst, uint32_t size, uint64_t offset, const std::string& what) -> Status {
    auto read = pread_exactly(fd->get(), dst, size, offset,
                              [&] { return what + " member at offset " + std::to_string(offset); });
    return read.ok() ? read : fail(read.error().message());
  };
  if (label_size_[i] > kMaxLabelBytes) {
    return fail("has a " + label_ext_ + " member of " + std::to_string(label_size_[i]) + " bytes at offset " +
                std::to_string(label_offset_[i]) + ", not an integer class index");
  }
  char text[kMaxLabelBytes];
  BATCHD_RETURN_IF_ERROR(pread_all(text, label_size_[i], label_offset_[i], label_ext_));
  if (!parse_label(std::string_view(text, label_size_[i]), label)) {
    // Its bytes are not quoted: an error must never show what a file holds (issue 23, finding 6).
    return fail("has a " + label_ext_ + " member of " + std::to_string(label_size_[i]) + " bytes at offset " +
                std::to_string(label_offset_[i]) + " that is not an ASCII integer; it must hold the class index in "
                "decimal");
  }
  bytes->resize(image_size_[i]);
  if (bytes->empty()) return fail("has an empty image member at offset " + std::to_string(image_offset_[i]));
  return pread_all(bytes->data(), image_size_[i], image_offset_[i], "image");
}

void WebDatasetDataset::add_index(FingerprintBuilder& builder) const {
  builder.add_param("image_field", image_exts_);
  builder.add_param("label_field", label_ext_);
  const std::string index = "index (keys, member offsets and sizes) of " + std::to_string(size()) + " samples";
  builder.add_memory(index, keys_.data(), keys_.size());
  for (const auto* v : {&key_end_, &image_offset_, &label_offset_}) {
    builder.add_memory(index, v->data(), v->size() * sizeof(uint64_t));
  }
  for (const auto* v : {&image_size_, &label_size_}) builder.add_memory(index, v->data(), v->size() * sizeof(uint32_t));
}

Result<Fingerprint> WebDatasetDataset::fingerprint(const std::atomic<bool>* cancel) const {
  FingerprintBuilder builder(format());
  add_index(builder);
  if (is_remote()) return remote_fingerprint(builder, cancel);
  const auto names = FingerprintBuilder::relative_to_common_directory(shard_path_);
  for (size_t s = 0; s < shard_path_.size(); ++s) builder.add_file(names[s], shard_path_[s]);
  return builder.finish(cancel);
}

std::string WebDatasetDataset::changed_on_disk() const {
  if (is_remote()) return remote_changed();
  auto shards = expand_shards(patterns_, "datasets." + name_ + ".shards");
  if (!shards.ok()) return shards.error().message();
  if (*shards != shard_path_) {
    return "its shards now expand to " + std::to_string(shards->size()) + " files (" +
           std::to_string(shard_path_.size()) + " were indexed)";
  }
  for (size_t s = 0; s < shard_path_.size(); ++s) {
    struct stat st {};
    if (::stat(shard_path_[s].c_str(), &st) != 0) return shard_path_[s] + " is gone";
    if (FileId::of(st) != shard_file_[s]) return shard_path_[s] + " is another file since it was indexed";
    if (static_cast<uint64_t>(st.st_size) != shard_size_[s] || mtime_ns(st) != shard_mtime_ns_[s]) {
      return shard_path_[s] + " changed (size or mtime) since it was indexed";
    }
  }
  return "";
}

}  // namespace batchd::daemon
