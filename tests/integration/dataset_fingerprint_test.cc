// Dataset fingerprints through a real daemon and `batchctl datasets --json`, for every format: a copy of the data in
// another directory with other mtimes (as on another node) has the same fingerprint as the original; a copy with one
// byte or one file name changed has another; and a byte changed in a served file is seen after a reload (SIGHUP).
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

namespace fs = std::filesystem;

// Copies `from` (a file or a tree) to `to` and gives every file there an mtime of 2001-09-09.
void copy_with_other_mtimes(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy(from, to, fs::copy_options::recursive);
  const timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
  if (fs::is_regular_file(to)) {
    ASSERT_EQ(::utimensat(AT_FDCWD, to.c_str(), times, 0), 0) << to;
    return;
  }
  for (const auto& e : fs::recursive_directory_iterator(to)) ASSERT_EQ(::utimensat(AT_FDCWD, e.path().c_str(), times, 0), 0);
}

void flip_byte(const fs::path& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(~c));
  ASSERT_TRUE(f) << path;
}

// `batchctl datasets --json`, by dataset name.
std::map<std::string, wire::DatasetInfo> datasets_json(const std::string& socket) {
  auto run = batchctl("--socket " + socket + " datasets --json");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  wire::StatusReply reply;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &reply).ok()) << run.out;
  std::map<std::string, wire::DatasetInfo> out;
  for (const auto& d : reply.dataset_entries()) out[d.name()] = d;
  return out;
}

// Polls until every dataset's fingerprint is "ready" (they are computed in the background).
std::map<std::string, wire::DatasetInfo> wait_fingerprinted(const std::string& socket, size_t count) {
  std::map<std::string, wire::DatasetInfo> last;
  const bool done = eventually(
      [&] {
        last = datasets_json(socket);
        if (last.size() != count) return false;
        for (const auto& [name, d] : last) {
          if (d.fingerprint_status() != "ready") return false;
        }
        return true;
      },
      std::chrono::seconds(120));
  EXPECT_TRUE(done) << "fingerprints not ready";
  for (const auto& [name, d] : last) {
    EXPECT_EQ(d.fingerprint().size(), 32u) << name << ": " << d.fingerprint_status();
    EXPECT_FALSE(d.fingerprint_covers().empty()) << name;
  }
  return last;
}

TEST(DatasetFingerprintTest, CopiesElsewhereMatchAndChangedCopiesDoNotThroughBatchctlJson) {
  TempDir dir("fingerprints");
  const fs::path root = dir.path;
  const fs::path fm = "/usr/share/datasets/fashion-mnist";
  // The originals: the test data, Fashion-MNIST's test split, a token file.
  std::string tokens;
  for (int k = 0; k < 4096; ++k) tokens += static_cast<char>(k * 13);
  std::ofstream(root / "train.bin", std::ios::binary) << tokens;
  // Copies "on another node": other directories, other mtimes, single-file datasets under other names.
  copy_with_other_mtimes(kData + "/imagefolder", root / "node2/images");
  copy_with_other_mtimes(kData + "/shards", root / "node2/wds");
  copy_with_other_mtimes(fm / "t10k-images-idx3-ubyte.gz", root / "node2/fm/images.gz");
  copy_with_other_mtimes(fm / "t10k-labels-idx1-ubyte.gz", root / "node2/fm/labels.gz");
  copy_with_other_mtimes(root / "train.bin", root / "node2/owt.bin");
  // Changed copies: one byte of one image, one shard renamed, one token.
  copy_with_other_mtimes(kData + "/imagefolder", root / "node3/images");
  fs::path first_image;
  for (const auto& e : fs::recursive_directory_iterator(root / "node3/images")) {
    if (e.is_regular_file() && e.path().extension() == ".jpg") first_image = e.path();
  }
  ASSERT_FALSE(first_image.empty());
  flip_byte(first_image, fs::file_size(first_image) / 2);
  copy_with_other_mtimes(kData + "/shards", root / "node3/wds");
  fs::rename(root / "node3/wds/shard-000003.tar", root / "node3/wds/shard-000004.tar");
  copy_with_other_mtimes(root / "train.bin", root / "node3/owt.bin");
  flip_byte(root / "node3/owt.bin", 100);

  auto imagefolder = [](const std::string& name, const fs::path& r) {
    return "[datasets." + name + "]\nformat = \"imagefolder\"\nroot = \"" + r.string() + "\"\n";
  };
  auto idx = [](const std::string& name, const fs::path& images, const fs::path& labels) {
    return "[datasets." + name + "]\nformat = \"idx\"\nimages = \"" + images.string() + "\"\nlabels = \"" +
           labels.string() + "\"\n";
  };
  auto lm = [](const std::string& name, const fs::path& path) {
    return "[datasets." + name + "]\nformat = \"tokens\"\npath = \"" + path.string() + "\"\nseq_len = 64\n";
  };
  const std::string config =
      imagefolder("img-a", kData + "/imagefolder") + imagefolder("img-b", root / "node2/images") +
      imagefolder("img-c", root / "node3/images") + wds_table("wds-a", toml_string(kShards)) +
      wds_table("wds-b", toml_string((root / "node2/wds/shard-{000000..000003}.tar").string())) +
      wds_table("wds-c", "[\"" + (root / "node3/wds/shard-{000000..000002}.tar").string() + "\", \"" +
                             (root / "node3/wds/shard-000004.tar").string() + "\"]") +
      idx("fm-a", fm / "t10k-images-idx3-ubyte.gz", fm / "t10k-labels-idx1-ubyte.gz") +
      idx("fm-b", root / "node2/fm/images.gz", root / "node2/fm/labels.gz") + lm("lm-a", root / "train.bin") +
      lm("lm-b", root / "node2/owt.bin") + lm("lm-c", root / "node3/owt.bin");
  std::ofstream(root / "batchd.toml") << config;
  auto daemon = start_daemon("", 1, {"--config", (root / "batchd.toml").string(), "--cache-dir", ""});

  auto ds = wait_fingerprinted(daemon.socket_path(), 11);
  for (const std::string format : {"img", "wds", "fm", "lm"}) {
    EXPECT_EQ(ds[format + "-a"].fingerprint(), ds[format + "-b"].fingerprint()) << format << ": the same data";
    if (format != "fm") {
      EXPECT_NE(ds[format + "-a"].fingerprint(), ds[format + "-c"].fingerprint()) << format << ": changed";
    }
  }
  EXPECT_EQ(ds["img-a"].format(), "imagefolder");
  EXPECT_EQ(ds["img-a"].state(), "available");
  EXPECT_EQ(ds["img-a"].samples(), 61u);
  EXPECT_EQ(ds["lm-a"].format(), "tokens");
  EXPECT_EQ(ds["fm-a"].samples(), 10000u);
  EXPECT_NE(ds["img-a"].fingerprint_covers().find("every byte"), std::string::npos) << ds["img-a"].fingerprint_covers();
  // The table shows the first 12 digits.
  const auto table = batchctl("--socket " + daemon.socket_path() + " datasets");
  EXPECT_NE(table.out.find(ds["wds-a"].fingerprint().substr(0, 12)), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("FINGERPRINT"), std::string::npos) << table.out;

  // The same byte changed in img-b's copy: the daemon reads images per sample, so it serves the change; a reload
  // (SIGHUP, config unchanged) computes the fingerprint again, and img-b now matches img-c, no longer img-a.
  flip_byte(root / "node2/images" / first_image.lexically_relative(root / "node3/images"),
            fs::file_size(first_image) / 2);
  ASSERT_EQ(::kill(daemon.pid(), SIGHUP), 0);
  std::map<std::string, wire::DatasetInfo> after;
  EXPECT_TRUE(eventually(
      [&] {
        after = datasets_json(daemon.socket_path());
        return after["img-b"].fingerprint_status() == "ready" && after["img-b"].fingerprint() != ds["img-b"].fingerprint();
      },
      std::chrono::seconds(60)))
      << "img-b: " << after["img-b"].fingerprint_status() << " " << after["img-b"].fingerprint();
  EXPECT_EQ(after["img-b"].fingerprint(), ds["img-c"].fingerprint());
  after = wait_fingerprinted(daemon.socket_path(), 11);
  EXPECT_EQ(after["img-a"].fingerprint(), ds["img-a"].fingerprint()) << "unchanged data, the same fingerprint again";
}

}  // namespace
}  // namespace batchd::testing
