// webdataset_remote.cc — WebDatasetDataset over remote shards (s3://, http(s)://): the open (listing, HEADs, the index
// cache keyed by URL + ETag + size, a fetch into the shard store for each shard not indexed yet) and the per-sample
// parts that differ from local shards (names, stamps, the reason a local copy is missing, the fingerprint).
#include <fcntl.h>
#include <unistd.h>

#include <xxhash.h>

#include <atomic>
#include <optional>
#include <thread>

#include "batchd/mutex.h"
#include "batchd/wire/printable.h"
#include "data/index_cache.h"
#include "base/shard_spec.h"
#include "data/webdataset_dataset.h"
#include "remote/aws_settings.h"
#include "remote/remote_listing.h"
#include "remote/remote_url.h"

namespace batchd::daemon {

namespace {

// What stands for a remote shard's file identity in the index cache: no device, the ETag's hash for the inode.
FileId remote_file_id(const remote::RemoteObject& object) {
  return {0, XXH3_64bits(object.etag.data(), object.etag.size()) | 1};
}

}  // namespace

Result<std::shared_ptr<WebDatasetDataset>> WebDatasetDataset::open_remote(const DatasetConfig& c,
                                                                          const OpenContext& ctx) {
  const std::string key = "datasets." + c.name + ".shards";
  for (const auto& p : c.shards) {
    if (!remote::is_remote(p)) {
      return Error(ErrorCode::kInvalidArgument, key + " mixes local paths (" + p + ") with remote URLs: declare the "
                                                "local shards as a dataset of their own");
    }
  }
  if (ctx.shard_store == nullptr) {
    return Error(ErrorCode::kInvalidArgument,
                 key + " names remote shards, which are fetched into daemon.cache_dir/shards, and this daemon has "
                       "no shard cache: daemon.cache_dir is \"\" (set it), or it is not the daemon's own directory (the "
                       "log says why), or remote.cache_max_bytes is 0");
  }
  LoadProgress* progress = ctx.progress;
  const std::atomic<bool>* cancel = progress != nullptr ? &progress->cancel : nullptr;
  auto aws = remote::resolve_aws_settings_for(c.shards, {c.credentials_file, c.profile, c.endpoint_url, c.region},
                                              "datasets." + c.name);
  if (!aws.ok()) return aws.error();
  auto settings = std::make_shared<const remote::AwsSettings>(std::move(aws).value());
  remote::ObjectStore store(ctx.shard_store->http(), *settings);
  store.set_cancel(cancel);
  auto objects = remote::expand_remote_shards(c.shards, key, store, kMaxShards, cancel);
  if (!objects.ok()) return objects.error();
  const size_t n = objects->size();
  if (progress != nullptr) progress->total = n;

  const SampleFields fields = SampleFields::parse(c.image_field, c.label_field);
  const std::string fields_text = c.image_field + "|" + c.label_field;
  auto ds = make(c, fields);
  ds->store_ = ctx.shard_store;
  OpenStats& stats = ds->stats_;
  stats.shards = n;
  stats.remote_warning = settings->warnings;  // openers do not log: the summary carries it to the log and batchctl
  stats.cache_file = index_cache_path(ctx.cache_dir, c.shards, fields_text);
  stats.cache_problem = index_cache_dir_problem(ctx.cache_dir);
  const bool use_cache = stats.cache_problem.empty();
  LoadedIndexCache cache;
  if (use_cache) cache = load_index_cache(stats.cache_file, fields_text);
  if (use_cache) stats.cache_problem = cache.problem;

  std::vector<ShardIndex> all(n);
  std::vector<remote::RemoteObject>& shards = *objects;
  std::vector<std::string> paths(n);
  ds->remote_id_.resize(n);
  std::vector<size_t> to_index;  // shards to fetch and index
  for (size_t i = 0; i < n; ++i) {
    ds->remote_id_[i] = ctx.shard_store->add(shards[i], settings, c.name);
    auto cached = cache.shards.find(shards[i].url);
    if (cached != cache.shards.end() && cached->second.file == remote_file_id(shards[i]) &&
        cached->second.file_size == shards[i].size) {
      all[i] = std::move(cached->second);
      ++stats.from_cache;
    } else {
      to_index.push_back(i);
    }
  }
  if (progress != nullptr) progress->done = n - to_index.size();
  // The others: fetched into the store (where epoch 1 then finds them, while the bound allows) and indexed from
  // there, remote.fetch_concurrency at once; each pinned from its fetch until it is read, so no other fetch evicts it
  // meanwhile (a fetch waits for room while others are pinned). A
  // shard replaced on the server since it was listed is listed again and fetched anew (twice at most).
  Mutex mu;  // guards failed, shards[], ds->remote_id_ and all[] among the threads
  std::optional<std::pair<size_t, Error>> failed;  // the first shard (in order) that failed
  std::atomic<size_t> next{0};
  auto index_one = [&](size_t i, std::optional<remote::ObjectStore>& lister) -> Result<ShardIndex> {
    for (int attempt = 0; attempt < 4; ++attempt) {
      const uint32_t id = ds->remote_id_[i];
      auto fetched = ctx.shard_store->fetch_now(id, cancel, /*pin=*/true);
      if (!fetched.ok() && attempt < 2 && fetched.error().message().find("changed on the server") != std::string::npos) {
        if (!lister) lister.emplace(ctx.shard_store->http(), *settings);
        auto again = lister->stat(shards[i].url);
        if (!again.ok()) return again.error();
        MutexLock lock(&mu);
        shards[i] = std::move(again).value();
        ds->remote_id_[i] = ctx.shard_store->add(shards[i], settings, c.name);
        continue;
      }
      if (!fetched.ok()) return fetched.error();
      auto indexed = index_shard(ctx.shard_store->path(id), fields, cancel);
      ctx.shard_store->release({id});
      return indexed;
    }
    return Error(ErrorCode::kUnavailable, "fetched 4 times without being indexed (the cache is too small for the "
                                          "shards being fetched at once: raise remote.cache_max_bytes)");
  };
  auto work = [&] {
    std::optional<remote::ObjectStore> lister;
    for (size_t k; (k = next++) < to_index.size();) {
      const size_t i = to_index[k];
      {
        MutexLock lock(&mu);
        if (failed) return;
      }
      auto indexed = index_one(i, lister);
      MutexLock lock(&mu);
      if (!indexed.ok()) {
        if (!failed || i < failed->first) failed.emplace(i, indexed.error());
        return;
      }
      all[i] = std::move(indexed).value();
      all[i].file = remote_file_id(shards[i]);  // the cache entry is keyed by URL + ETag + size
      all[i].mtime_ns = 0;
      ++stats.indexed;
      if (progress != nullptr) ++progress->done;
    }
  };
  {
    std::vector<std::thread> threads;
    const size_t count = std::min<size_t>(to_index.size(), ctx.shard_store->concurrency());
    for (size_t t = 1; t < count; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
  }
  if (failed) {
    if (cancel != nullptr && cancel->load()) return Error(ErrorCode::kUnavailable, "indexing was cancelled");
    const auto& [i, error] = *failed;
    return Error(error.code(), error.message() + " (shard " + std::to_string(i + 1) + " of " + std::to_string(n) +
                                   " in " + key + ": " + remote::redact(shards[i].url) + ")");
  }
  std::vector<std::string> urls;
  for (size_t i = 0; i < n; ++i) {
    urls.push_back(shards[i].url);
    paths[i] = ctx.shard_store->path(ds->remote_id_[i]);
    ds->remote_url_.push_back(remote::redact(shards[i].url));  // what errors show: never a presigned query
    ds->remote_etag_.push_back(shards[i].etag);
  }
  if (use_cache && (stats.indexed > 0 || cache.shards.size() != n)) {
    std::vector<const ShardIndex*> indexes;
    for (const auto& s : all) indexes.push_back(&s);
    if (auto saved = save_index_cache(stats.cache_file, fields_text, urls, indexes); !saved.ok()) {
      stats.cache_problem += (stats.cache_problem.empty() ? "" : "; ") + saved.error().message();
    }
  }
  const uint64_t samples = ds->assemble(all, paths);
  if (samples == 0) {
    return Error(ErrorCode::kDataError, "the " + std::to_string(n) + " shard(s) of " + key + " hold no sample "
                                        "(no member named <key>.<extension>); check the pattern");
  }
  ds->describe(samples);
  return ds;
}

// Constant: the local copy's name holds the URL, ETag and size, so its bytes are those the index was built from, and
// a shard replaced on the server is another file (never fetched for this load). Called in the workers: it must not
// touch the store (its mutex may have been held by a fetch thread when the worker was forked).
FileStamp WebDatasetDataset::remote_stamp(size_t shard) const {
  const std::string& etag = remote_etag_[shard];
  return {shard_size_[shard], static_cast<int64_t>(XXH3_64bits(etag.data(), etag.size()) >> 1),
          uint64_t{remote_id_[shard]} + 1};
}

std::string WebDatasetDataset::remote_missing(size_t shard, const Error& error) const {
  const std::string& path = shard_path_[shard];
  char reason[4096];
  ssize_t n = -1;
  if (int fd = ::open((path + ".error").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); fd >= 0) {
    n = ::read(fd, reason, sizeof reason);
    ::close(fd);
  }
  if (n > 0) {
    return "cannot be read: fetching the shard failed: " + std::string(reason, static_cast<size_t>(n)) +
           " (the fetch is tried again after a cool-down; batchctl datasets counts the failures)";
  }
  return "cannot be read: the shard's local copy is missing (" + error.message() + "); it is fetched again for the "
         "next task that needs it";
}

Result<Fingerprint> WebDatasetDataset::remote_fingerprint(FingerprintBuilder& builder,
                                                          const std::atomic<bool>* cancel) const {
  // The shards by URL, ETag and size: their content is what the server says it is (nothing is downloaded for this).
  for (size_t s = 0; s < remote_url_.size(); ++s) {
    builder.add_param("shard", remote_url_[s] + " " + remote_etag_[s] + " " + std::to_string(shard_size_[s]));
  }
  return builder.finish(cancel);
}

std::string WebDatasetDataset::remote_changed() const {
  for (size_t s = 0; s < remote_url_.size(); ++s) {
    if (store_->changed_on_server(remote_id_[s])) {
      return remote_url_[s] + " changed on the server since it was indexed (its ETag is no longer " +  // redacted
             wire::printable(remote_etag_[s]) + ")";
    }
  }
  return "";
}

}  // namespace batchd::daemon
