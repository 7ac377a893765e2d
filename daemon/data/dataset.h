// dataset.h — named, read-only sources of samples, declared in the config and opened once at start-up.
//
// The registry lives in the daemon's main process and the workers are forked from it, so they share the dataset's
// pages (its index, a mapped token file) instead of loading their own copies; when a dataset is installed later (a
// reload, a background index) the workers are forked again. A dataset that fails to open does not stop the daemon:
// it is listed as unavailable with the reason, and OpenStream on it returns that reason.
//
// Opening is quick for idx, imagefolder and tokens and happens where the registry is (start-up, SIGHUP). A
// webdataset may need every shard's headers read: it is opened on a background thread (data/dataset_loader.h) and
// is "loading" meanwhile; OpenStream on it gets kUnavailable "indexing (k of n shards)".
//
// Every loaded dataset gets a content fingerprint (data/fingerprint.h; `batchctl datasets --json`), computed on the
// same background thread after each open and again after each reload (FingerprintJob).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <vector>
#include <memory>
#include <string>

#include "batchd/result.h"
#include "data/dataset_config.h"
#include "data/fingerprint.h"
#include "data/folder_listing.h"
#include "data/regular_file.h"

namespace batchd::daemon {

namespace remote {
class ShardStore;
}

// The vision pipelines' view of a dataset (train224, train224_u8, val224): sample i is an encoded image (JPEG or
// PNG) and an integer class label. ImageFolder and WebDataset shards both provide it.
class ImageSamples {
 public:
  virtual ~ImageSamples() = default;
  // Reads sample i's encoded image into *bytes (reusing its capacity) and its label into *label; i < size(). Called
  // in workers, concurrently from several processes. A failure of this one sample (a file gone, a short read, a
  // label that is not an integer, a sample without an image) is kDataError naming the file, and the offset where
  // there is one, so the stream's on_error policy applies.
  virtual Status read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const = 0;
  // How errors name sample i: the image's path, or "shard.tar: sample 'key'". Written into *out, reusing its
  // capacity: the vision pipelines name every sample they decode, and this costs no allocation per sample.
  virtual void sample_name(uint64_t i, std::string* out) const = 0;
  std::string sample_name(uint64_t i) const {
    std::string name;
    sample_name(i, &name);
    return name;
  }
  // Sample i's file as it is now (an imagefolder's image, a webdataset's shard): one stat, for the sample cache,
  // which uses an entry only while the file is unchanged. {} (inode 0) when it cannot be stat'ed or is no longer the
  // file that was scanned or indexed.
  virtual FileStamp stamp(uint64_t i) const = 0;
};

// The lm pipeline's view of a dataset: a flat array of N little-endian token ids, read as windows of T + 1 tokens
// (the inputs, and shifted by one the targets). Which windows a stream reads, and its T, are the stream's
// (transforms/ops/token_window.h); the dataset's own seq_len is the default T and sets size(). A token file
// (data/token_dataset.h) provides it, mapped read-only, so every reader shares the page cache's copy.
class TokenWindows {
 public:
  enum class Dtype : uint8_t { kUint16 = 2, kUint32 = 4 };  // the value is the bytes per token
  virtual ~TokenWindows() = default;
  virtual Dtype dtype() const = 0;
  virtual uint32_t seq_len() const = 0;       // the configured T (datasets.NAME.seq_len): a stream's default
  virtual uint64_t token_count() const = 0;   // N, as opened
  // The address of token `offset` (of dtype()), offset < token_count(); valid as long as the dataset. Reading past
  // tokens_present() raises SIGBUS (a file truncated since it was opened): check that first.
  virtual const void* token(uint64_t offset) const = 0;
  // How many tokens the file holds now: token_count(), unless it was truncated after it was opened. One stat:
  // readers check it once per batch, not per token.
  virtual uint64_t tokens_present() const = 0;
  // The kDataError for the window of `length` tokens at `offset` once it is no longer whole in the file (offset +
  // length > tokens_present()), naming the file and the fix.
  virtual Error window_missing(uint64_t offset, uint64_t length) const = 0;
  // How errors name that window: "path: tokens [offset, offset + length)".
  virtual std::string window_name(uint64_t offset, uint64_t length) const = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual const std::string& name() const = 0;
  virtual const char* format() const = 0;
  virtual uint64_t size() const = 0;  // samples, indexed [0, size)
  // The dataset as image samples, or nullptr if it holds none (the vision pipelines refuse it, naming its format).
  virtual const ImageSamples* images() const { return nullptr; }
  // The dataset as token windows, or nullptr if it is not a token file (the lm pipeline refuses it, naming its format).
  virtual const TokenWindows* tokens() const { return nullptr; }
  // An imagefolder's listing, by which a trainer's torchvision ImageFolder is recognised (streams/folder_match.h);
  // nullptr for every other format.
  virtual const FolderListing* folder() const { return nullptr; }
  // What there is to say about the open beyond the size, for the log and `batchctl datasets` ("" if nothing): a
  // webdataset's shard count, how many came from the index cache, samples without an image or label.
  virtual std::string summary() const { return ""; }
  // Why the files behind the dataset no longer match what was opened ("" if they do, or if the format does not
  // check): a webdataset's pattern now matches other shards or a shard changed size or mtime; a token file was
  // replaced or resized. A reload (SIGHUP) opens such a dataset again even though its config is unchanged. Called
  // on the event loop: stat()s only, no reading.
  virtual std::string changed_on_disk() const { return ""; }
  // A content fingerprint of the data as it is now (data/fingerprint.h: names relative to the dataset's root, sizes,
  // content; never mtimes or absolute paths). Reads files: called on the DatasetLoader's thread, never on the event
  // loop, and must not log; *cancel (may be null) is polled between files. Thread-safe. Errors name the file. The
  // base class has none (kInvalidArgument naming the format): every format of open_dataset overrides it.
  virtual Result<Fingerprint> fingerprint(const std::atomic<bool>* cancel) const;
};

// Progress of an open that runs in the background (a webdataset's shard index). The opener sets `total` (shards)
// first, then counts `done` up; the registry reads both for "indexing (k of n shards)". `cancel` is set when the
// daemon stops: the opener returns as soon as it sees it (any error; the result is dropped).
struct LoadProgress {
  std::atomic<uint64_t> done{0}, total{0};
  std::atomic<bool> cancel{false};
};

// What an open may use beyond the dataset's config. Openers run on a background thread: they must not log (spdlog's
// locks must never be held across the fork of a worker) — they return what there is to say in the Result.
struct OpenContext {
  std::string cache_dir{};           // daemon.cache_dir; "" = no index cache
  LoadProgress* progress = nullptr;  // never null for a background open
  // Where remote shards (s3://, http(s)://) are fetched to (remote/shard_store.h); null: remote shards are refused
  // (daemon.cache_dir = "" or remote.cache_max_bytes = 0).
  std::shared_ptr<remote::ShardStore> shard_store{};
};

// Opens one dataset as configured. kNotFound / kDataError / kInvalidArgument naming the file (and offset).
Result<std::shared_ptr<const Dataset>> open_dataset(const DatasetConfig& config, const OpenContext& context);
// Whether open_dataset(config) may take long enough to belong on the background loader (webdataset).
bool opens_in_background(const DatasetConfig& config);

// A background open the registry hands out (DatasetRegistry::reload) and takes back (install). `ticket` tells a
// result that a later reload superseded from the current one.
struct LoadJob {
  DatasetConfig config;
  uint64_t ticket = 0;
  std::shared_ptr<LoadProgress> progress;
};

// A fingerprint to compute (Dataset::fingerprint) for loaded data: DatasetRegistry hands them out
// (take_fingerprint_jobs), DatasetLoader runs them and gives the result back (set_fingerprint). `ticket` tells a
// result that a later job for the same data superseded.
struct FingerprintJob {
  std::string key;  // the data's key ("<name>#<load number>")
  uint64_t ticket = 0;
  std::shared_ptr<const Dataset> dataset;
  std::shared_ptr<LoadProgress> progress;  // only `cancel` is used: set when the job is superseded or the daemon stops
};

// Used on the event loop only (the background loader posts its results there).
class DatasetRegistry final {
 public:
  // Opens every configured dataset now, background ones included (tests, tools); failures are recorded, not fatal.
  static DatasetRegistry open_all(const std::vector<DatasetConfig>& configs, const std::string& cache_dir = "");

  // The dataset, or kNotFound (undeclared: lists the declared names) / kUnavailable (failed to open: why; or still
  // loading: "indexing (k of n shards)").
  Result<std::shared_ptr<const Dataset>> find(const std::string& name) const;
  // Every loaded dataset also has a key ("<name>#<load number>") that names exactly that data: streams record it
  // and workers attach by it, so a stream keeps reading the data it opened even after a reload changed or removed
  // the dataset (the old data is retired, and kept while a stream uses it).
  std::string key(const std::string& name) const;
  Result<std::shared_ptr<const Dataset>> find_key(const std::string& key) const;

  struct ReloadSummary {
    std::vector<std::string> added, removed, changed, unavailable;
    std::vector<LoadJob> jobs;  // background opens to run (DatasetLoader), their datasets "loading" until install()
    std::map<std::string, std::string> changed_on_disk;  // unchanged config, changed files: name -> why
  };
  // Start-up and SIGHUP: applies a dataset list. Entries equal to the current ones (every key: DatasetConfig ==)
  // whose files did not change (Dataset::changed_on_disk) keep their loaded data, or their load in progress; new or changed ones are opened now, or returned as jobs if
  // they open in the background. Replaced or removed data whose key is in `in_use_keys` is retired (kept for its
  // streams) instead of dropped.
  ReloadSummary reload(const std::vector<DatasetConfig>& configs, const std::set<std::string>& in_use_keys,
                       const std::string& cache_dir = "");
  // Takes a background job's result: installs the dataset (or records why it is unavailable) and returns true, or
  // returns false, dropping the result, if a reload changed or removed the dataset since the job was handed out.
  bool install(const LoadJob& job, Result<std::shared_ptr<const Dataset>> result);

  // The fingerprints to compute, handed out once each: one for every dataset opened or installed since the last
  // call, and after a reload one for every available dataset, kept ones included (a file can change under an
  // unchanged config: an imagefolder's images are read per sample). A new job for a dataset cancels the one before.
  std::vector<FingerprintJob> take_fingerprint_jobs();
  // Records a job's result; false, dropping it, if the data is no longer loaded or a later job superseded it.
  bool set_fingerprint(const FingerprintJob& job, Result<Fingerprint> result);

  enum class State { kAvailable, kLoading, kUnavailable };
  struct Description {
    State state = State::kAvailable;
    std::string detail;  // kLoading: "indexing (k of n shards)"; kUnavailable: the error text; kAvailable: summary()
    std::string format;  // as declared
    uint64_t samples = 0;  // kAvailable only
    // kAvailable only: the data's fingerprint once computed ("" before, or if that failed), and its status:
    // "computing", "ready" or "failed: <why>".
    Fingerprint fingerprint;
    std::string fingerprint_status;
  };
  // Every declared dataset, sorted by name.
  std::map<std::string, Description> describe() const;

 private:
  struct Loaded {
    std::shared_ptr<const Dataset> dataset;
    std::string key;
  };
  struct Loading {
    uint64_t ticket = 0;
    std::shared_ptr<LoadProgress> progress;
  };
  static std::string loading_text(const LoadProgress& progress);
  // Queues a fingerprint job for loaded data, superseding (cancelling) the previous one of that key.
  void queue_fingerprint(const Loaded& loaded);
  struct FingerprintState {
    uint64_t ticket = 0;
    std::shared_ptr<LoadProgress> progress;  // of the job under way, to cancel it
    Fingerprint result;
    std::string status = "computing";
  };

  std::map<std::string, Loaded> available_;  // by name
  std::map<std::string, std::string> unavailable_;
  std::map<std::string, Loading> loading_;
  std::map<std::string, std::shared_ptr<const Dataset>> retired_;  // by key
  std::map<std::string, FingerprintState> fingerprints_;  // by key, for the available datasets
  std::vector<FingerprintJob> fingerprint_jobs_;           // not yet handed out
  uint64_t loads_ = 0, tickets_ = 0;
  std::map<std::string, DatasetConfig> configs_;  // as declared, to tell unchanged entries on reload
};

}  // namespace batchd::daemon
