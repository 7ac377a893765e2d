// webdataset_dataset.h — WebDataset tar shards (format = "webdataset"): samples are members grouped by key.
//
// The config's `shards` patterns are expanded into the shard list (shard_spec.h: brace ranges as webdataset writes
// them, globs, or a list of both). Each shard's tar headers are indexed (tar_index.h: with libarchive; a sample is
// the consecutive members sharing a key, as webdataset's group_by_keys) — or the index is taken from the index
// cache under daemon.cache_dir (index_cache.h) for every shard whose size and mtime are unchanged.
//
// Sample order: shard order (the patterns' order, then each one's expansion: brace ranges in counting order, glob
// matches sorted by name), then member order within a shard. Sample i of batchd is the i-th sample webdataset
// yields from the same shard list without shuffling (webdataset.WebDataset(urls, shardshuffle=False)).
//
// read_image(i) opens the shard (open_regular_file: never blocks on a FIFO put in its place) and preads the image
// member (the first of image_field's extensions the sample has) and the label member (label_field: an ASCII
// integer, whitespace around it allowed). Per-sample failures are kDataError naming the shard, the key and the
// offset, so the stream's on_error applies: a sample without an image or label member (kept in the index so that
// indices match webdataset's), a label that is not an integer, a shard that changed size or mtime since it was
// indexed or is another file (replaced, or swapped for a symlink to another: checked by device and inode after the
// open, before any read), a failed read. No error quotes a byte of a shard. The index is compact (parallel arrays,
// keys in one string) and read-only once open: the object is shared by forked workers and read concurrently;
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/fingerprint.h"
#include "data/regular_file.h"
#include "data/tar_index.h"
#include "remote/shard_store.h"

namespace batchd::daemon {

class WebDatasetDataset final : public Dataset, public ImageSamples {
 public:
  // Expands the shards, sets context.progress->total to their number and counts ->done up per shard; uses and
  // refreshes the index cache when context.cache_dir is set (a cache that cannot be read or written only costs
  // time: summary() says so). Errors (the dataset is unavailable) name the file and, where there is one, the
  // offset: a missing shard or a glob matching nothing (kNotFound, with the config key), a truncated, compressed
  // or non-tar shard, a duplicate extension in a sample (kDataError), shards that hold no sample. kUnavailable if
  // context.progress->cancel was set meanwhile.
  static Result<std::shared_ptr<WebDatasetDataset>> open(const DatasetConfig& config, const OpenContext& context);

  const std::string& name() const override { return name_; }
  const char* format() const override { return "webdataset"; }
  uint64_t size() const override { return key_end_.size(); }
  const ImageSamples* images() const override { return this; }
  std::string summary() const override { return summary_; }
  // The patterns expanded again (a glob may match new shards) and every shard stat()ed against its indexed size and
  // mtime.
  std::string changed_on_disk() const override;
  // The image and label fields, the index (every sample's key, its members' offsets and sizes), each shard's path
  // relative to the shards' common directory, its size and content as data/fingerprint.h samples it.
  Result<Fingerprint> fingerprint(const std::atomic<bool>* cancel) const override;

  Status read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const override;
  // "<shard path>: sample '<key>'".
  using ImageSamples::sample_name;
  void sample_name(uint64_t i, std::string* out) const override;
  // The shard's stamp, and {} once it differs from the one indexed (read_image refuses that shard too).
  FileStamp stamp(uint64_t i) const override;

  // How the last open went, for the log and tests.
  struct OpenStats {
    size_t shards = 0, from_cache = 0, indexed = 0;
    uint64_t without_image = 0, without_label = 0;
    std::string cache_file;     // "" without a cache_dir
    std::string cache_problem;  // why the cache was not read or not written ("" if all went well)
    std::string remote_warning;  // remote shards: what the AWS settings skipped (an unreadable ~/.aws/config)
  };
  const OpenStats& open_stats() const { return stats_; }

  size_t shard_of(uint64_t i) const;
  const std::string& shard_path(size_t shard) const { return shard_path_[shard]; }
  size_t shards() const { return shard_path_.size(); }

  // Remote shards (s3://, http(s)://; webdataset_remote.cc): each shard's local copy is the shard store's file
  // (shard_path), fetched before a task reads it (streams/remote_reads.h). Null for local shards.
  bool is_remote() const { return store_ != nullptr; }
  remote::ShardStore* shard_store() const { return store_.get(); }
  uint32_t shard_id(size_t shard) const { return remote_id_[shard]; }
  const std::vector<uint32_t>& shard_ids() const { return remote_id_; }
  const std::string& shard_url(size_t shard) const { return remote_url_[shard]; }

 private:
  static std::shared_ptr<WebDatasetDataset> make(const DatasetConfig& config, const SampleFields& fields);
  void add_index(FingerprintBuilder& builder) const;  // the fields and the index, for fingerprint()
  static Result<std::shared_ptr<WebDatasetDataset>> open_remote(const DatasetConfig& config, const OpenContext& ctx);
  // Appends the shards' indexes (released as it goes) to the dataset; the samples in all.
  uint64_t assemble(std::vector<ShardIndex>& all, const std::vector<std::string>& paths);
  void describe(uint64_t samples);  // summary_
  FileStamp remote_stamp(size_t shard) const;
  std::string remote_missing(size_t shard, const Error& error) const;
  Result<Fingerprint> remote_fingerprint(FingerprintBuilder& builder, const std::atomic<bool>* cancel) const;
  std::string remote_changed() const;

  std::string name_, image_exts_, label_ext_, summary_;
  std::vector<std::string> patterns_;  // the config's shards, for changed_on_disk
  OpenStats stats_;
  // Per shard.
  std::vector<std::string> shard_path_;
  std::vector<uint64_t> shard_size_;
  std::vector<int64_t> shard_mtime_ns_;
  std::vector<FileId> shard_file_;  // the file indexed: a read opens it and refuses any other
  std::vector<uint64_t> shard_first_;  // index of its first sample; one more element: size()
  // Per sample.
  std::string keys_;
  std::vector<uint64_t> key_end_;
  std::vector<uint64_t> image_offset_, label_offset_;
  std::vector<uint32_t> image_size_, label_size_;
  // Remote shards only.
  std::shared_ptr<remote::ShardStore> store_;
  std::vector<uint32_t> remote_id_;
  std::vector<std::string> remote_url_, remote_etag_;
};

}  // namespace batchd::daemon
