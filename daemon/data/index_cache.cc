#include "data/index_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <chrono>
#include <string_view>

#include "batchd/wire/unique_fd.h"
#include "base/file_trust.h"
#include "data/regular_file.h"

namespace batchd::daemon {

namespace {

constexpr char kMagic[8] = {'B', 'A', 'T', 'C', 'H', 'D', 'W', 'X'};
constexpr uint64_t kMaxCacheBytes = uint64_t{1} << 36;  // 64 GiB: far beyond any real index; refuses nonsense

uint64_t fnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint32_t crc(std::string_view bytes) {
  uLong c = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < bytes.size();) {  // crc32 takes a uInt length
    const size_t n = std::min<size_t>(bytes.size() - done, 1u << 30);
    c = crc32(c, reinterpret_cast<const Bytef*>(bytes.data() + done), static_cast<uInt>(n));
    done += n;
  }
  return static_cast<uint32_t>(c);
}

class Writer {
 public:
  template <typename T>
  void put(T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  template <typename T>
  void put_array(const std::vector<T>& v) {
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put_string32(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    out += s;
  }
  std::string out;
};

// Reads values from the file's bytes; every read is bounds-checked, and once one fails every later one does.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool get(T* v) {
    if (!ok_ || in_.size() - pos_ < sizeof(T)) return ok_ = false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  template <typename T>
  bool get_array(std::vector<T>* v, uint64_t n) {
    if (!ok_ || n > (in_.size() - pos_) / sizeof(T)) return ok_ = false;
    v->resize(n);
    std::memcpy(v->data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }
  template <typename Length>
  bool get_string(std::string* s) {
    Length n = 0;
    if (!get(&n) || n > in_.size() - pos_) return ok_ = false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool at_end() const { return ok_ && pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// The cache file's bytes, if it is the daemon's own: not a symlink (O_NOFOLLOW), a regular file, owned by the
// daemon's uid and writable by no one else (kPermissionDenied naming why otherwise). One that others may read
// (0644, as batchd wrote them before) is made 0600: it lists every sample's key.
Result<std::string> read_whole(const std::string& file) {
  wire::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid() && errno == ELOOP) return Error(ErrorCode::kPermissionDenied, file + " is a symbolic link");
  if (!fd.valid()) return posix_error("cannot open " + file, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return posix_error("cannot stat " + file, errno);
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxCacheBytes) {
    return Error(ErrorCode::kDataError, file + " is not a regular file of a plausible size");
  }
  if (const std::string why = why_not_the_daemons(file, st); !why.empty()) {
    return Error(ErrorCode::kPermissionDenied, why);
  }
  if ((st.st_mode & 077) != 0) ::fchmod(fd.get(), 0600);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  BATCHD_RETURN_IF_ERROR(pread_exactly(fd.get(), bytes.data(), bytes.size(), 0, file));
  return bytes;
}

}  // namespace

std::string index_cache_path(const std::string& dir, const std::vector<std::string>& patterns,
                             const std::string& fields) {
  uint64_t h = fnv1a(14695981039346656037ull, "batchd webdataset index");
  h = fnv1a(h, std::string_view(fields.c_str(), fields.size() + 1));
  for (const auto& s : patterns) h = fnv1a(h, std::string_view(s.c_str(), s.size() + 1));
  char name[64];
  std::snprintf(name, sizeof(name), "webdataset-%016llx.idx", static_cast<unsigned long long>(h));
  return dir + (dir.empty() || dir.back() == '/' ? "" : "/") + name;
}

std::string index_cache_dir_problem(const std::string& dir) {
  if (std::string link = foreign_symlink_in("daemon.cache_dir " + dir, dir); !link.empty()) {
    return link + ": the index cache and the remote shards' cache are not used. Set daemon.cache_dir to a directory "
                  "of the daemon user's, reached through no other user's link (systemd: CacheDirectory=batchd)";
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "";  // a missing directory: writing the cache fails and says so
  const std::string why = why_not_the_daemons("daemon.cache_dir " + dir, st, /*own_group_may_write=*/true);
  if (why.empty()) return "";
  return why + ", so another user could plant or replace an index there: the index cache is not used. Make it the "
               "daemon user's and writable by no one else (chown <daemon user> " + dir + "; chmod 0700 " + dir +
               "; systemd: CacheDirectory=batchd), or set daemon.cache_dir to such a directory";
}

LoadedIndexCache load_index_cache(const std::string& file, const std::string& fields) {
  LoadedIndexCache loaded;
  auto bytes = read_whole(file);
  if (!bytes.ok()) {
    if (bytes.error().code() == ErrorCode::kPermissionDenied) {
      loaded.problem = bytes.error().message() + ": not trusted, not used (it is replaced)";
    } else if (bytes.error().code() != ErrorCode::kNotFound) {
      loaded.problem = bytes.error().message();
    }
    return loaded;
  }
  auto unusable = [&](const std::string& why) {
    loaded.shards.clear();
    loaded.problem = file + " " + why + "; it was not used";
    return std::move(loaded);
  };
  const std::string_view all(*bytes);
  if (all.size() < sizeof(kMagic) + 4 || std::memcmp(all.data(), kMagic, sizeof(kMagic)) != 0) {
    return unusable("is not a batchd webdataset index");
  }
  uint32_t stored_crc = 0;
  std::memcpy(&stored_crc, all.data() + all.size() - 4, 4);
  if (crc(all.substr(0, all.size() - 4)) != stored_crc) return unusable("is damaged (its CRC does not match)");
  Reader r(all.substr(sizeof(kMagic), all.size() - sizeof(kMagic) - 4));
  uint32_t version = 0;
  std::string stored_fields;
  uint64_t count = 0;
  if (!r.get(&version) || version != kIndexCacheVersion) return unusable("has another format version");
  if (!r.get_string<uint32_t>(&stored_fields) || stored_fields != fields) return unusable("is for other fields");
  if (!r.get(&count)) return unusable("is damaged");
  for (uint64_t i = 0; i < count; ++i) {
    std::string path;
    ShardIndex s;
    uint64_t n = 0;
    if (!r.get_string<uint32_t>(&path) || !r.get(&s.file_size) || !r.get(&s.mtime_ns) || !r.get(&s.file.device) ||
        !r.get(&s.file.inode) || !r.get(&n) ||
        !r.get_string<uint64_t>(&s.keys) || !r.get_array(&s.key_end, n) || !r.get_array(&s.image_offset, n) ||
        !r.get_array(&s.image_size, n) || !r.get_array(&s.label_offset, n) || !r.get_array(&s.label_size, n)) {
      return unusable("is damaged (an entry is cut short)");
    }
    if (!s.consistent()) return unusable("is damaged (an entry points outside its shard)");
    loaded.shards[path] = std::move(s);
  }
  if (!r.at_end()) return unusable("is damaged (bytes after its last entry)");
  return loaded;
}

Status save_index_cache(const std::string& file, const std::string& fields, const std::vector<std::string>& paths,
                        const std::vector<const ShardIndex*>& indexes) {
  Writer w;
  w.out.append(kMagic, sizeof(kMagic));
  w.put(kIndexCacheVersion);
  w.put_string32(fields);
  w.put(static_cast<uint64_t>(paths.size()));
  for (size_t i = 0; i < paths.size(); ++i) {
    const ShardIndex& s = *indexes[i];
    w.put_string32(paths[i]);
    w.put(s.file_size);
    w.put(s.mtime_ns);
    w.put(s.file.device);
    w.put(s.file.inode);
    w.put(static_cast<uint64_t>(s.samples()));
    w.put(static_cast<uint64_t>(s.keys.size()));
    w.out += s.keys;
    w.put_array(s.key_end);
    w.put_array(s.image_offset);
    w.put_array(s.image_size);
    w.put_array(s.label_offset);
    w.put_array(s.label_size);
  }
  w.put(crc(w.out));

  const std::string temp = file + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  wire::UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return posix_error("cannot write the index cache " + temp, errno);
  auto fail = [&](const char* what, int err) {
    ::unlink(temp.c_str());
    return posix_error(std::string("cannot ") + what + " the index cache " + temp, err);
  };
  if (::fchmod(fd.get(), 0600) != 0) return fail("chmod", errno);
  for (size_t done = 0; done < w.out.size();) {
    const ssize_t n = ::write(fd.get(), w.out.data() + done, w.out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write", n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  if (::close(fd.release()) != 0) return fail("close", errno);
  if (::rename(temp.c_str(), file.c_str()) != 0) return fail("rename", errno);
  return ok_status();
}

void prepare_index_cache_dir(std::string& dir) {
  if (dir.empty()) return;
  if (std::string link = foreign_symlink_in("daemon.cache_dir " + dir, dir); !link.empty()) {
    spdlog::warn("{}: nothing is kept there (dataset indexes are built at every start, remote shards are not "
                 "cached); set daemon.cache_dir to a directory of the daemon user's", link);
    dir.clear();  // not created, not written: another user chose where it leads
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && ::access(dir.c_str(), W_OK | X_OK) != 0) ec = std::error_code(errno, std::generic_category());
  if (ec) {
    spdlog::warn("daemon.cache_dir {} cannot be used ({}): dataset indexes will be built at every start and not "
                 "kept; create it writable for the daemon's user (systemd: CacheDirectory=batchd) or set "
                 "daemon.cache_dir",
                 dir, ec.message());
    dir.clear();
  } else if (const std::string problem = index_cache_dir_problem(dir); !problem.empty()) {
    spdlog::warn("{}", problem);
  }
}

}  // namespace batchd::daemon
