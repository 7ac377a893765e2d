// webdataset_fixture.h — helpers for the webdataset integration tests: a config of shard datasets, waiting for a
// background index, and the expected values from Python's tarfile (torchvision_reference.py --webdataset).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <fstream>
#include <string>
#include <vector>

#include "daemon_fixture.h"

namespace batchd::testing {

inline const std::string kData = BATCHD_TESTDATA_DIR;
inline const std::string kShards = kData + "/shards/shard-{000000..000003}.tar";

// A scratch directory under the test temp dir, removed with the object.
struct TempDir {
  explicit TempDir(const std::string& what)
      : path(::testing::TempDir() + "batchd-" + what + "-" + std::to_string(::getpid())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

// "[datasets.<name>]" with format = "webdataset" and `shards` (TOML: a string or an array, written as given).
inline std::string wds_table(const std::string& name, const std::string& shards_toml) {
  return "[datasets." + name + "]\nformat = \"webdataset\"\nshards = " + shards_toml + "\n";
}
inline std::string toml_string(const std::string& s) { return "\"" + s + "\""; }

// The daemon's status line for dataset `name` ("" if it does not list it).
inline std::string dataset_line(const std::string& socket, const std::string& name) {
  for (const auto& d : daemon_status(socket).datasets) {
    if (d == name || d.rfind(name + " (", 0) == 0) return d;
  }
  return "";
}

// Waits until dataset `name` is no longer indexing; returns its status line.
inline std::string wait_indexed(const std::string& socket, const std::string& name) {
  std::string line;
  const bool done = eventually(
      [&] {
        line = dataset_line(socket, name);
        return !line.empty() && line.find("(indexing") == std::string::npos;
      },
      std::chrono::seconds(120));
  EXPECT_TRUE(done) << "dataset " << name << " still indexing: " << line;
  return line;
}

// The samples of the shards matching `glob` as Python's tarfile reads them: labels (and, for the first `n`,
// torchvision's val224 output in *pixels). False (with the reason) if the reference script failed.
struct Reference {
  std::vector<int64_t> labels;
  std::vector<std::string> names;  // "<shard>: sample '<key>'"
  std::vector<float> pixels;       // [n, 3, 224, 224]
};
inline bool tar_reference(const std::string& glob, int n, Reference* ref, std::string* why) {
  TempDir dir("wds-ref");
  const std::string out = dir.path + "/ref";
  if (!torchvision_reference("--webdataset '" + glob + "' " + std::to_string(n) + " " + out + " " +
                                 (n > 0 ? "val224" : "index"),
                             why)) {
    return false;
  }
  std::ifstream labels(out + ".labels");
  for (int64_t l; labels >> l;) ref->labels.push_back(l);
  std::ifstream names(out + ".paths");
  for (std::string line; std::getline(names, line);) ref->names.push_back(line);
  ref->pixels.resize(static_cast<size_t>(n) * 3 * 224 * 224);
  std::ifstream(out + ".f32", std::ios::binary)
      .read(reinterpret_cast<char*>(ref->pixels.data()), static_cast<std::streamsize>(ref->pixels.size() * 4));
  return true;
}

// One daemon for a test suite: `config` written to a file in its own temporary directory, the index cache in
// <dir>/cache unless `extra` says otherwise; every dataset in `wait_for` indexed before the tests run.
struct SuiteDaemon {
  SuiteDaemon(const std::string& what, const std::string& config, std::vector<std::string> extra,
              const std::vector<std::string>& wait_for)
      : dir(what), daemon([&] {
          std::ofstream(dir.path + "/batchd.toml") << config;
          std::vector<std::string> args = {"--config", dir.path + "/batchd.toml"};
          if (extra.empty()) extra = {"--cache-dir", dir.path + "/cache"};
          args.insert(args.end(), extra.begin(), extra.end());
          return start_daemon("", 2, args);
        }()) {
    for (const auto& name : wait_for) wait_indexed(daemon.socket_path(), name);
  }
  Client client() const { return std::move(Client::connect(daemon.socket_path())).value(); }

  TempDir dir;
  tools::SpawnedDaemon daemon;
};

}  // namespace batchd::testing
