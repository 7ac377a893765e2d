#include "data/sample_grouper.h"

#include <algorithm>

namespace batchd::daemon {

KeyExtension split_member_name(std::string_view name) {
  // ^((?:.*/|)[^.]+)[.]([^/]*)$ : the dot is the first one after the last '/', and the key must end in at least
  // one character that is not a dot.
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string_view::npos) return {};
  if (dot > base) return {true, name.substr(0, dot), name.substr(dot + 1)};
  // The last component starts with a dot: the key can only end at that '/', and the run of non-dots before the dot
  // must reach back to the previous '/' (or the start) without a dot.
  if (slash == std::string_view::npos) return {};
  const size_t previous = slash == 0 ? std::string_view::npos : name.rfind('/', slash - 1);
  const size_t run = previous == std::string_view::npos ? 0 : previous + 1;
  if (name.substr(run, slash - run).find('.') != std::string_view::npos) return {};
  return {true, name.substr(0, slash + 1), name.substr(dot + 1)};
}

bool is_metadata_member(std::string_view name) {
  const std::string_view first = name.substr(0, name.find('/'));
  return first.size() >= 4 && first.substr(0, 2) == "__" && first.substr(first.size() - 2) == "__";
}

Status SampleGrouper::add(std::string_view name, uint64_t header_offset, uint64_t data_offset, uint64_t size) {
  if (is_metadata_member(name)) return ok_status();
  const KeyExtension ke = split_member_name(name);
  if (!ke.ok) return ok_status();  // webdataset skips it too
  std::string ext(ke.extension);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!open_ || ke.key != key_) {
    if (out_->keys.size() + ke.key.size() + key_.size() >= UINT32_MAX) {
      return Error(ErrorCode::kDataError, shard_ + " has more than 4 GiB of sample keys; split it into smaller shards");
    }
    close_sample();
    open_ = true;
    key_.assign(ke.key);
    first_header_ = header_offset;
    extensions_.clear();
    image_rank_ = SIZE_MAX;
    image_size_ = label_size_ = kMissingField;
  }
  const std::string where = shard_ + ": member '" + std::string(name) + "' (header at offset " +
                            std::to_string(header_offset) + ")";
  if (std::find(extensions_.begin(), extensions_.end(), ext) != extensions_.end()) {
    return Error(ErrorCode::kDataError, where + " is a second ." + ext + " member of sample '" + key_ +
                                            "' (webdataset refuses this too); rewrite the shard with one member per "
                                            "extension and key");
  }
  extensions_.push_back(ext);
  const bool label = ext == fields_.label;
  const size_t rank = static_cast<size_t>(std::find(fields_.image.begin(), fields_.image.end(), ext) -
                                          fields_.image.begin());
  const bool image = rank < fields_.image.size() && rank < image_rank_;  // preferred to the image it has so far
  if (!label && !image) return ok_status();  // a field batchd does not read
  if (size >= kMissingField) {
    return Error(ErrorCode::kDataError, where + " is " + std::to_string(size) + " bytes; batchd reads image and "
                                                                               "label members under 4 GiB");
  }
  if (label) {
    label_offset_ = data_offset;
    label_size_ = static_cast<uint32_t>(size);
  }
  if (image) {
    image_rank_ = rank;
    image_offset_ = data_offset;
    image_size_ = static_cast<uint32_t>(size);
  }
  return ok_status();
}

void SampleGrouper::finish() { close_sample(); }

void SampleGrouper::close_sample() {
  if (!open_) return;
  open_ = false;
  out_->keys += key_;
  out_->key_end.push_back(static_cast<uint32_t>(out_->keys.size()));
  out_->image_offset.push_back(image_size_ == kMissingField ? first_header_ : image_offset_);
  out_->image_size.push_back(image_size_);
  out_->label_offset.push_back(label_size_ == kMissingField ? first_header_ : label_offset_);
  out_->label_size.push_back(label_size_);
}

}  // namespace batchd::daemon
