// shard_fetch.cc — the store's files and transfers: open() (the directory, leftovers, the bound), the fetch threads,
// fetch_now, and one download (.part, fetch, fsync, rename; .error on failure). Bookkeeping: shard_store.cc.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "batchd/wire/unique_fd.h"
#include "base/file_trust.h"
#include "remote/shard_store.h"

namespace batchd::daemon::remote {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

Result<std::shared_ptr<ShardStore>> ShardStore::open(ShardStoreOptions options) {
  const std::string dir = options.dir;
  if (dir.empty() || dir.front() != '/') {
    return Error(ErrorCode::kInvalidArgument, "the remote shard cache needs daemon.cache_dir (an absolute path)");
  }
  // The directory is made at the first download (a daemon without remote shards leaves no trace in cache_dir).
  std::shared_ptr<ShardStore> store(new ShardStore(std::move(options)));
  uint64_t cached = 0;
  std::map<std::string, uint64_t> orphans;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return posix_error("cannot stat " + dir, errno);
  } else {
    if (const std::string why = why_not_the_daemons("the remote shard cache " + dir, st); !why.empty()) {
      return Error(ErrorCode::kPermissionDenied, why + "; remove it (the daemon makes it again, mode 0700) or set "
                                                 "daemon.cache_dir to a directory of the daemon's");
    }
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return posix_error("cannot list " + dir, errno);
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string path = dir + "/" + name;
      struct stat fst {};
      if (::lstat(path.c_str(), &fst) != 0) continue;
      // A crash mid-download leaves .part files; .error files describe fetches of the last run. Neither is kept.
      if (ends_with(name, ".part") || ends_with(name, ".error") || !S_ISREG(fst.st_mode) ||
          !ends_with(name, ".tar") || name.size() != 36 || fst.st_uid != ::geteuid()) {
        if (S_ISREG(fst.st_mode) || S_ISLNK(fst.st_mode)) ::unlink(path.c_str());
        continue;
      }
      orphans[name] = static_cast<uint64_t>(fst.st_size);
      cached += static_cast<uint64_t>(fst.st_size);
    }
    ::closedir(d);
  }
  {
    MutexLock lock(&store->mu_);  // no other thread has the store yet: for the analysis, which cannot know that
    store->orphans_ = std::move(orphans);
    store->bytes_ = cached;
  }
  if (store->options_.max_bytes >= 0) {
    store->max_bytes_ = static_cast<uint64_t>(store->options_.max_bytes);
  } else {
    struct statvfs vfs {};
    const std::string where = cached > 0 ? dir : dir.substr(0, dir.rfind('/'));  // the dir, or cache_dir
    if (::statvfs(where.c_str(), &vfs) != 0) return posix_error("cannot statvfs " + where, errno);
    store->max_bytes_ = (static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize + cached) / 2;
  }
  return store;
}

ShardStoreOptions remote_store_options(const RemoteSettings& r, const std::string& cache_dir) {
  ShardStoreOptions o;
  o.dir = cache_dir.empty() ? "" : cache_dir + "/shards";
  o.max_bytes = r.cache_max_bytes;
  o.concurrency = r.fetch_concurrency;
  o.http = HttpSettings{r.connect_timeout_s, r.stall_timeout_s, r.request_timeout_s, r.retries, r.backoff_base_s,
                        r.backoff_max_s, r.ca_file};
  return o;
}

ShardStore::~ShardStore() { stop(); }

void ShardStore::stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cancel_.store(true);
    on_change_ = nullptr;
    threads.swap(threads_);
  }
  wake_.notify_all();
  for (auto& t : threads) t.join();
}

void ShardStore::notify() {
  std::function<void()> f;
  {
    MutexLock lock(&mu_);
    f = on_change_;
  }
  if (f) f();
}

Status ShardStore::download(ObjectStore& store, const Shard& shard) {
  const std::string part = shard.file + ".part";
  const std::string error_file = shard.file + ".error";
  if (::mkdir(options_.dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return posix_error("cannot create the remote shard cache " + options_.dir + " (daemon.cache_dir must be "
                       "writable by the daemon; systemd: CacheDirectory=batchd)", errno);
  }
  ::unlink(part.c_str());
  wire::UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  Status result = ok_status();
  if (!fd.valid()) {
    result = posix_error("cannot create " + part, errno);
  } else {
    result = store.fetch(shard.object, fd.get());
    if (result.ok() && ::fsync(fd.get()) != 0) result = posix_error("cannot fsync " + part, errno);
    if (result.ok() && ::rename(part.c_str(), shard.file.c_str()) != 0) {
      result = posix_error("cannot rename " + part, errno);
    }
  }
  if (result.ok()) {
    ::unlink(error_file.c_str());
    return result;
  }
  ::unlink(part.c_str());
  std::string why = result.error().message();
  if (why.find("No space left") != std::string::npos) {  // the body's write, or fsync/rename (posix_error)
    why += " (the remote shard cache " + options_.dir + " is on a full file system: free space there, or lower "
           "remote.cache_max_bytes below what daemon.cache_dir can hold)";
  }
  // The reason, for workers that find the shard missing (at most 4 KiB; written whole or not at all).
  const std::string tmp = error_file + ".tmp";
  if (wire::UniqueFd ef(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)); ef.valid()) {
    const std::string text = why.substr(0, 4096);
    if (::write(ef.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size())) {
      ::rename(tmp.c_str(), error_file.c_str());
    } else {
      ::unlink(tmp.c_str());
    }
  }
  return Error(result.error().code(), why);
}

void ShardStore::finish_locked(uint32_t id, const Status& result, bool ahead) {
  Shard& s = shards_[id];
  --fetching_;
  if (result.ok()) {
    s.state = State::kHere;
    s.used = ++tick_;
    count_locked(s, &FetchTotals::fetched);
    count_locked(s, &FetchTotals::fetched_bytes, s.object.size);
    if (ahead) count_locked(s, &FetchTotals::prefetched);
  } else {
    bytes_ -= s.object.size;  // the reservation
    s.state = State::kFailed;
    s.failed_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now().time_since_epoch()).count();
    s.changed |= result.error().message().find("changed on the server") != std::string::npos;
    s.last_error = result.error().message();
    count_locked(s, &FetchTotals::failed);
  }
  done_.notify_all();
}

void ShardStore::fetch_thread() {
  // One ObjectStore per signing identity (datasets may use different credentials): connections reused within each.
  std::map<const AwsSettings*, std::pair<std::shared_ptr<const AwsSettings>, ObjectStore>> stores;
  MutexLock lock(&mu_);
  while (true) {
    while (!stopping_ && jobs_.empty()) wake_.wait(lock);
    if (stopping_) return;
    const auto [id, ahead] = jobs_.front();
    jobs_.erase(jobs_.begin());
    const Shard snapshot = shards_[id];  // object, aws and file never change once added
    lock.unlock();
    auto it = stores.find(snapshot.aws.get());
    if (it == stores.end()) {
      it = stores.emplace(snapshot.aws.get(), std::make_pair(snapshot.aws, ObjectStore(options_.http,
                                                              snapshot.aws ? *snapshot.aws : AwsSettings{})))
               .first;
      it->second.second.set_cancel(&cancel_);
    }
    const Status result = download(it->second.second, snapshot);
    lock.lock();
    finish_locked(id, result, ahead);
    schedule_locked();
    lock.unlock();
    notify();
    lock.lock();
  }
}

std::optional<Status> ShardStore::fetch_now_wait(uint32_t id, const std::atomic<bool>* cancel, bool pin) {
  while (true) {
    Shard& s = shards_.at(id);
    if (s.state == State::kHere) {
      s.used = ++tick_;
      s.pins += pin ? 1 : 0;
      return ok_status();
    }
    if (s.state == State::kFailed) return Error(ErrorCode::kUnavailable, s.last_error);
    if (s.state == State::kAbsent) return std::nullopt;  // it was evicted or dropped meanwhile
    if (cancel != nullptr && cancel->load()) return Error(ErrorCode::kUnavailable, "cancelled");
    done_.wait_for(mu_, std::chrono::milliseconds(200));  // a fetch thread has it
  }
}

Status ShardStore::fetch_now(uint32_t id, const std::atomic<bool>* cancel, bool pin) {
  MutexLock lock(&mu_);
  // A fetch thread has it: wait for it. Gone again (evicted, dropped) meanwhile: fetched here, below.
  if (shards_.at(id).state == State::kHere || shards_[id].state == State::kFetching) {
    if (auto waited = fetch_now_wait(id, cancel, pin)) return *waited;
  }
  // Room: may take shards asked for ahead; waits while fetches under way or running tasks may free some.
  const uint64_t since = ++tick_;
  while (!make_room_locked(shards_[id].object.size, since)) {
    uint64_t pinned = 0;
    for (const Shard& other : shards_) pinned += other.pins > 0 ? other.object.size : 0;
    const Shard& s = shards_[id];
    if (s.object.size > max_bytes_ || (fetching_ == 0 && pinned == 0)) {
      return Error(ErrorCode::kResourceExhausted,
                   redact(s.object.url) + " (" + std::to_string(s.object.size) + " bytes) does not fit in "
                   "remote.cache_max_bytes (" + std::to_string(max_bytes_) + " bytes; " + std::to_string(bytes_) +
                   " in use, held for waiting tasks or asked for ahead): raise remote.cache_max_bytes");
    }
    if (cancel != nullptr && cancel->load()) return Error(ErrorCode::kUnavailable, "cancelled");
    done_.wait_for(mu_, std::chrono::milliseconds(200));
    if (shards_[id].state == State::kHere || shards_[id].state == State::kFetching) {  // a fetch thread has it
      if (auto waited = fetch_now_wait(id, cancel, pin)) return *waited;
    }
  }
  Shard& s = shards_[id];
  s.state = State::kFetching;
  bytes_ += s.object.size;
  ++fetching_;
  const Shard snapshot = s;
  lock.unlock();
  ObjectStore store(options_.http, snapshot.aws ? *snapshot.aws : AwsSettings{});
  store.set_cancel(cancel);
  const Status result = download(store, snapshot);
  lock.lock();
  finish_locked(id, result, /*ahead=*/false);
  if (result.ok() && pin) ++shards_[id].pins;
  schedule_locked();
  lock.unlock();
  notify();  // a stream may be waiting for this shard
  return result;
}

}  // namespace batchd::daemon::remote
