// sample_grouper.h — webdataset's group_by_keys over a shard's members, in the order they come (tar_index.h).
//
// Feed it each regular-file member (name, where its header starts, where its data starts, its size); it appends the
// samples to a ShardIndex as keys change. Pure (no I/O); one instance per shard; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "batchd/result.h"
#include "data/tar_index.h"

namespace batchd::daemon {

// webdataset's base_plus_ext: (key, extension as written) of a member name, or nullopt-like {"", ""} with ok=false
// when its regex ^((?:.*/|)[^.]+)[.]([^/]*)$ does not match. Exposed for tests.
struct KeyExtension {
  bool ok = false;
  std::string_view key, extension;
};
KeyExtension split_member_name(std::string_view name);
// webdataset's metadata members ("__key__", "__meta__/x"), which it skips.
bool is_metadata_member(std::string_view name);

class SampleGrouper {
 public:
  // `shard` names the file in errors; `out` receives the samples and must outlive the grouper.
  SampleGrouper(const SampleFields& fields, std::string shard, ShardIndex* out)
      : fields_(fields), shard_(std::move(shard)), out_(out) {}

  // One member. kDataError if its extension is already in the current sample (naming the shard, the member and
  // its offset) or a field is 4 GiB or more.
  Status add(std::string_view name, uint64_t header_offset, uint64_t data_offset, uint64_t size);
  // Ends the last sample. Call once, after the last member.
  void finish();

 private:
  void close_sample();

  const SampleFields& fields_;
  const std::string shard_;
  ShardIndex* out_;
  bool open_ = false;                    // a sample is under way
  std::string key_;                      // its key
  uint64_t first_header_ = 0;            // where its first member's header starts
  std::vector<std::string> extensions_;  // the extensions it has so far
  size_t image_rank_ = SIZE_MAX;         // position in fields_.image of the image it has (SIZE_MAX: none yet)
  uint64_t image_offset_ = 0, label_offset_ = 0;
  uint32_t image_size_ = kMissingField, label_size_ = kMissingField;
};

}  // namespace batchd::daemon
