// The webdataset index cache: reused while shards keep their size and mtime (no shard read, the file not
// rewritten), rebuilt for a changed shard only, and never trusted when damaged, foreign, of another version or
// pointing outside a shard, nor when another user could have written it (a cache_dir or file that is not the
// daemon's: issue 23, finding 5); an unwritable cache_dir costs time, not the dataset.
#include "data/index_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>

#include "data/webdataset_dataset.h"
#include "tar_writers.h"
#include "user_process.h"

namespace batchd::daemon {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::file_bytes;

class IndexCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(cache_);
    for (int s = 0; s < 3; ++s) write_shard(s, "");
    config_.name = "wds";
    config_.format = "webdataset";
    config_.shards = {dir_ / "shard-{0..2}.tar"};
  }
  void write_shard(int s, const std::string& variant) {
    std::vector<testing::Member> members;
    for (int k = 0; k < 3; ++k) {
      const std::string key = "k" + std::to_string(s) + std::to_string(k);
      members.push_back({key + ".jpg", variant + bytes_of(200 + 50 * k, 3 * s + k)});
      members.push_back({key + ".cls", std::to_string(3 * s + k)});
    }
    testing::python_tar(dir_ / ("shard-" + std::to_string(s) + ".tar"), members);
  }
  std::shared_ptr<WebDatasetDataset> open() {
    auto ds = WebDatasetDataset::open(config_, OpenContext{cache_, nullptr});
    EXPECT_TRUE(ds.ok()) << ds.error().message();
    return ds.ok() ? *ds : nullptr;
  }
  static struct stat stat_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st;
  }
  std::string image(const WebDatasetDataset& ds, uint64_t i) {
    std::vector<uint8_t> bytes;
    int64_t label = 0;
    EXPECT_TRUE(ds.read_image(i, &bytes, &label).ok());
    return std::string(bytes.begin(), bytes.end());
  }

  testing::ScratchDir dir_{"index-cache"};
  const std::string cache_ = dir_ / "cache";
  DatasetConfig config_;
};

TEST_F(IndexCacheTest, ReusedWhileShardsAreUnchangedAndRebuiltForAChangedShardOnly) {
  auto first = open();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->open_stats().indexed, 3u);
  EXPECT_EQ(first->open_stats().from_cache, 0u);
  const std::string file = first->open_stats().cache_file;
  EXPECT_EQ(fs::path(file).parent_path(), fs::path(cache_));
  EXPECT_EQ(fs::path(file).filename().string().size(), std::string("webdataset-0123456789abcdef.idx").size());
  const struct stat written = stat_of(file);
  EXPECT_EQ(written.st_mode & 0777, 0600u) << "it lists every sample's key: the daemon's alone";

  auto second = open();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->open_stats().from_cache, 3u);
  EXPECT_EQ(second->open_stats().indexed, 0u) << "no shard was read again";
  EXPECT_EQ(second->summary(), "9 samples in 3 shards (3 from the index cache, 0 indexed)");
  const struct stat reused = stat_of(file);
  EXPECT_EQ(reused.st_ino, written.st_ino) << "nothing changed: the cache file is not rewritten";
  EXPECT_EQ(reused.st_mtim.tv_nsec, written.st_mtim.tv_nsec);
  EXPECT_EQ(image(*second, 4), image(*first, 4));

  write_shard(1, "changed:");  // new size and mtime
  auto third = open();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->open_stats().from_cache, 2u);
  EXPECT_EQ(third->open_stats().indexed, 1u);
  EXPECT_EQ(image(*third, 4), "changed:" + bytes_of(250, 4)) << "the new index points at the new members";
  EXPECT_NE(stat_of(file).st_ino, written.st_ino) << "rewritten (a new file renamed over the old one)";
  EXPECT_EQ(open()->open_stats().from_cache, 3u);

  // The same bytes with a new mtime are indexed again too.
  const std::string shard = dir_ / "shard-2.tar";
  const timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, shard.c_str(), times, 0), 0);
  EXPECT_EQ(open()->open_stats().indexed, 1u);
}

TEST_F(IndexCacheTest, ADamagedCacheFileIsIgnoredAndRebuilt) {
  const std::string file = open()->open_stats().cache_file;
  std::string bytes = file_bytes(file, 0, fs::file_size(file));
  bytes[bytes.size() / 2] ^= 0x40;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  auto ds = open();
  EXPECT_EQ(ds->open_stats().indexed, 3u);
  EXPECT_NE(ds->open_stats().cache_problem.find(file + " is damaged (its CRC does not match); it was not used"),
            std::string::npos)
      << ds->open_stats().cache_problem;
  EXPECT_EQ(image(*ds, 8), bytes_of(300, 8));
  EXPECT_EQ(open()->open_stats().from_cache, 3u) << "rewritten whole";

  std::ofstream(file, std::ios::binary | std::ios::trunc) << "something else entirely";
  EXPECT_NE(open()->open_stats().cache_problem.find("is not a batchd webdataset index"), std::string::npos);
}

// Rewrites a cache file's bytes [8, 12) (the version) and its CRC.
void set_version(const std::string& file, uint32_t version) {
  std::string bytes = file_bytes(file, 0, fs::file_size(file));
  std::memcpy(bytes.data() + 8, &version, 4);
  const uint32_t c = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size() - 4));
  std::memcpy(bytes.data() + bytes.size() - 4, &c, 4);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

TEST_F(IndexCacheTest, EntriesAreNeverTrustedBeyondTheirBoundsOrFormat) {
  const std::string file = open()->open_stats().cache_file;
  set_version(file, kIndexCacheVersion + 1);
  EXPECT_NE(load_index_cache(file, "jpg;jpeg;png|cls").problem.find("has another format version"),
            std::string::npos);
  set_version(file, kIndexCacheVersion);
  EXPECT_EQ(load_index_cache(file, "jpg;jpeg;png|cls").shards.size(), 3u);
  EXPECT_NE(load_index_cache(file, "png|cls").problem.find("is for other fields"), std::string::npos);

  // A well-formed file (right CRC) whose entry claims a member beyond the shard's end.
  const std::string shard = dir_ / "shard-0.tar";
  ShardIndex lie = load_index_cache(file, "jpg;jpeg;png|cls").shards.at(shard);
  lie.image_offset[2] = lie.file_size - 10;
  ASSERT_TRUE(save_index_cache(file, "jpg;jpeg;png|cls", {shard}, {&lie}).ok());
  auto loaded = load_index_cache(file, "jpg;jpeg;png|cls");
  EXPECT_TRUE(loaded.shards.empty());
  EXPECT_NE(loaded.problem.find("is damaged (an entry points outside its shard)"), std::string::npos)
      << loaded.problem;
  EXPECT_EQ(open()->open_stats().indexed, 3u);
}

TEST_F(IndexCacheTest, DifferentShardListsOrFieldsUseDifferentFiles) {
  const std::vector<std::string> shards = {dir_ / "shard-0.tar", dir_ / "shard-1.tar"};
  const std::string a = index_cache_path(cache_, shards, "jpg|cls");
  EXPECT_EQ(a, index_cache_path(cache_ + "/", shards, "jpg|cls"));
  EXPECT_NE(a, index_cache_path(cache_, {shards[1], shards[0]}, "jpg|cls"));
  EXPECT_NE(a, index_cache_path(cache_, shards, "png|cls"));
}

TEST_F(IndexCacheTest, AnUnusableCacheDirDoesNotFailTheDataset) {
  auto ds = WebDatasetDataset::open(config_, OpenContext{dir_ / "no-such-dir", nullptr});
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  EXPECT_EQ((*ds)->size(), 9u);
  EXPECT_NE((*ds)->summary().find("index cache: cannot write the index cache " + dir_ / "no-such-dir/webdataset-"),
            std::string::npos)
      << (*ds)->summary();
}

// Issue 23, finding 5: in a cache_dir of mode 1777, another user (uid 65534) plants a well-formed index for the
// dataset in which samples 0 and 1 of shard 0 trade places. It must not be used: sample 0 keeps its own image.
TEST_F(IndexCacheTest, AnIndexPlantedInACacheDirOthersCanWriteIsNotUsed) {
  SKIP_UNLESS_ROOT();
  const std::string file = open()->open_stats().cache_file;
  auto poisoned = load_index_cache(file, "jpg;jpeg;png|cls").shards;
  ASSERT_EQ(poisoned.size(), 3u);
  ShardIndex& s0 = poisoned.at(dir_ / "shard-0.tar");
  std::swap(s0.image_offset[0], s0.image_offset[1]);
  std::swap(s0.image_size[0], s0.image_size[1]);
  std::swap(s0.label_offset[0], s0.label_offset[1]);
  std::swap(s0.label_size[0], s0.label_size[1]);
  std::vector<std::string> paths;
  std::vector<const ShardIndex*> indexes;
  for (const auto& [path, index] : poisoned) paths.push_back(path), indexes.push_back(&index);
  ASSERT_TRUE(save_index_cache(file, "jpg;jpeg;png|cls", paths, indexes).ok());
  const std::string bytes = file_bytes(file, 0, fs::file_size(file));
  fs::remove(file);
  ASSERT_EQ(::chmod(cache_.c_str(), 01777), 0);
  ASSERT_EQ(testing::run_as({}, [&]() -> std::string {
              std::ofstream(file, std::ios::binary) << bytes;
              return fs::file_size(file) == bytes.size() ? "" : "cannot plant " + file;
            }),
            "");

  auto ds = open();
  EXPECT_EQ(ds->open_stats().from_cache, 0u);
  EXPECT_NE(ds->open_stats().cache_problem.find("daemon.cache_dir " + cache_ +
                                                " is writable by others (mode 1777), so another user could plant or "
                                                "replace an index there: the index cache is not used"),
            std::string::npos)
      << ds->open_stats().cache_problem;
  EXPECT_NE(ds->summary().find("chmod 0700 " + cache_), std::string::npos) << ds->summary();
  EXPECT_EQ(image(*ds, 0), bytes_of(200, 0)) << "sample 0 served with another sample's image";
  EXPECT_EQ(stat_of(file).st_uid, testing::kNobody) << "the planted file is not touched either";
}

// A cache file in a good directory that is not the daemon's own (another owner, writable by others, a symlink) is
// ignored and replaced by one that is (mode 0600); one others may only read (as batchd wrote them before) is used
// and made 0600.
TEST_F(IndexCacheTest, ACacheFileThatIsNotTheDaemonsIsIgnoredAndReplaced) {
  SKIP_UNLESS_ROOT();
  const std::string file = open()->open_stats().cache_file;
  const std::string elsewhere = dir_ / "elsewhere.idx";
  fs::copy_file(file, elsewhere);
  const std::vector<std::pair<std::function<void()>, std::string>> cases = {
      {[&] { ASSERT_EQ(::chown(file.c_str(), testing::kNobody, testing::kNogroup), 0); },
       file + " is owned by uid 65534 (nobody), not by the daemon's uid 0 (root): not trusted, not used (it is "
              "replaced)"},
      {[&] { ASSERT_EQ(::chmod(file.c_str(), 0666), 0); }, file + " is writable by others (mode 0666)"},
      {[&] {
         fs::remove(file);
         fs::create_symlink(elsewhere, file);
       },
       file + " is a symbolic link: not trusted"}};
  for (const auto& [spoil, problem] : cases) {
    spoil();
    auto ds = open();
    EXPECT_EQ(ds->open_stats().from_cache, 0u) << problem;
    EXPECT_NE(ds->open_stats().cache_problem.find(problem), std::string::npos) << ds->open_stats().cache_problem;
    const struct stat st = stat_of(file);
    EXPECT_TRUE(st.st_uid == 0 && (st.st_mode & 07777) == 0600 && !fs::is_symlink(file)) << "not replaced";
    EXPECT_EQ(open()->open_stats().from_cache, 3u) << "the replacement is used";
  }
  ASSERT_EQ(::chmod(file.c_str(), 0644), 0);
  EXPECT_EQ(open()->open_stats().from_cache, 3u);
  EXPECT_EQ(stat_of(file).st_mode & 0777, 0600u);
}

// Issue 43 (9, from round two): daemon.cache_dir given as another user's symbolic link in a sticky directory was
// followed, so that user chose where the daemon wrote its index files. Such a link is never followed: the cache is
// not used, and the directory is neither created nor written; a link of root's own is followed as before.
TEST_F(IndexCacheTest, ACacheDirThroughAnotherUsersSymlinkIsNeverFollowed) {
  SKIP_UNLESS_ROOT();
  const std::string sticky = dir_ / "tmp", target = dir_ / "chosen", link = sticky + "/cache";
  fs::create_directories(sticky);
  fs::create_directories(target);
  ASSERT_EQ(::chmod(sticky.c_str(), 01777), 0);
  ASSERT_EQ(::chmod(target.c_str(), 0700), 0);  // the daemon's own: it would pass every other check
  ASSERT_EQ(testing::run_as({}, [&]() -> std::string {
              return ::symlink(target.c_str(), link.c_str()) == 0 ? "" : "cannot make the link";
            }),
            "");
  const std::string problem = index_cache_dir_problem(link);
  EXPECT_NE(problem.find("daemon.cache_dir " + link + ": " + link + " is a symbolic link owned by uid 65534 (nobody), "
                         "which the daemon does not follow"),
            std::string::npos)
      << problem;
  std::string dir = link;
  prepare_index_cache_dir(dir);
  EXPECT_EQ(dir, "") << "the cache dir is given up";
  auto ds = WebDatasetDataset::open(config_, OpenContext{link, nullptr});
  ASSERT_TRUE(ds.ok()) << ds.error().message();
  EXPECT_TRUE(fs::is_empty(target)) << "nothing written where the other user's link leads";
  const std::string own = dir_ / "own-link";
  fs::create_symlink(cache_, own);
  EXPECT_EQ(index_cache_dir_problem(own), "") << "the daemon's own link is followed";
}

}  // namespace
}  // namespace batchd::daemon
