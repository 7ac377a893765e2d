// Dataset files another user could change under a root daemon (issue 23): a shard swapped after indexing for a
// symlink to a root-only file of the same size and mtime is never read, and the stream's error quotes none of its
// bytes (finding 6); an index cache in a directory others can write is not used, and the daemon's own cache
// directory and files are private (finding 5). Real daemons; the other user is uid 65534 in forked children (root
// only).
#include <fcntl.h>
#include <sys/stat.h>

#include "other_user.h"
#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

namespace fs = std::filesystem;

StreamOptions first_shard_options() {
  StreamOptions o;
  o.dataset = "wds";
  o.pipeline = "train224_u8";
  o.batch_size = 15;
  o.shuffle = false;
  o.vision.crop_size = 16;
  return o;
}

TEST(DatasetTrustTest, AShardSwappedForALinkToARootOnlyFileIsNeverRead) {
  SKIP_UNLESS_ROOT();
  TempDir dir("wds-swap");
  const std::string shards = dir.path + "/shards", shard = shards + "/shard-000000.tar";
  fs::create_directories(shards);
  fs::copy_file(kData + "/shards/shard-000000.tar", shard);
  ASSERT_EQ(::chown(shards.c_str(), kNobody, kNogroup), 0);  // the dataset's directory is a user's
  ASSERT_EQ(::chown(shard.c_str(), kNobody, kNogroup), 0);
  // A root-only file of the shard's size and mtime.
  const std::string secret = dir.path + "/secret";
  std::string text;
  while (text.size() < fs::file_size(shard)) text += "SECRET";
  std::ofstream(secret, std::ios::binary) << text.substr(0, fs::file_size(shard));
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  struct stat indexed {};
  ASSERT_EQ(::stat(shard.c_str(), &indexed), 0);
  const timespec times[2] = {indexed.st_atim, indexed.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, secret.c_str(), times, 0), 0);

  std::ofstream(dir.path + "/batchd.toml") << wds_table("wds", toml_string(shard));
  auto daemon = start_daemon("", 1, {"--config", dir.path + "/batchd.toml", "--cache-dir", ""});
  wait_indexed(daemon.socket_path(), "wds");
  open_socket_to_everyone(daemon.socket_path());
  const std::string socket = daemon.socket_path();
  const std::string verdict = run_as({}, [&]() -> std::string {
    const std::string link = shard + ".new";
    if (::symlink(secret.c_str(), link.c_str()) != 0 || ::rename(link.c_str(), shard.c_str()) != 0) {
      return std::string("cannot swap the shard: ") + std::strerror(errno);
    }
    auto client = Client::connect(socket);
    if (!client.ok()) return client.error().message();
    auto stream = client->open_stream(first_shard_options());
    if (!stream.ok()) return "OpenStream: " + stream.error().message();
    auto batch = stream->next();
    if (batch.ok()) return "a batch was read from the root-only file";
    const std::string& m = batch.error().message();
    std::string out;
    if (m.find(shard + " changed since it was indexed (it is now another file") == std::string::npos) {
      out += "the error does not say the shard changed; ";
    }
    if (m.find("('") != std::string::npos || m.find("SECR") != std::string::npos) out += "the error quotes the file; ";
    return out.empty() ? "" : out + m;
  });
  EXPECT_EQ(verdict, "");
}

TEST(DatasetTrustTest, AnIndexCacheInADirectoryOthersCanWriteIsNotUsedAndTheDaemonsOwnIsPrivate) {
  SKIP_UNLESS_ROOT();
  TempDir dir("wds-cache-trust");
  std::ofstream(dir.path + "/batchd.toml") << wds_table("wds", toml_string(kShards));
  const std::string open_dir = dir.path + "/open", own_dir = dir.path + "/own/cache";
  fs::create_directories(open_dir);
  ASSERT_EQ(::chmod(open_dir.c_str(), 01777), 0);
  {
    auto daemon = start_daemon("", 1, {"--config", dir.path + "/batchd.toml", "--cache-dir", open_dir});
    const std::string line = wait_indexed(daemon.socket_path(), "wds");
    EXPECT_NE(line.find("(0 from the index cache, 4 indexed); index cache: daemon.cache_dir " + open_dir +
                        " is writable by others (mode 1777)"),
              std::string::npos)
        << line;
    EXPECT_TRUE(fs::is_empty(open_dir)) << "nothing is written there either";
  }
  auto daemon = start_daemon("", 1, {"--config", dir.path + "/batchd.toml", "--cache-dir", own_dir});
  wait_indexed(daemon.socket_path(), "wds");
  struct stat st {};
  ASSERT_EQ(::stat(own_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u) << "the cache directory the daemon makes is its own";
  ASSERT_FALSE(fs::is_empty(own_dir));
  for (const auto& e : fs::directory_iterator(own_dir)) {
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << e.path() << " lists every sample's key";
  }
}

}  // namespace
}  // namespace batchd::testing
