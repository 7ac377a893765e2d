// other_user.h — helpers for tests about who may do what, on top of user_process.h (run_as: part of a test as
// another uid, in a forked child that returns its verdict as a string, "" = fine): let that uid reach a test
// daemon's socket, and write a daemon config with extra keys. Tests that need a second uid skip, saying why, unless
// they run as root (`if (!running_as_root()) GTEST_SKIP() << kNeedsRoot;`).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "user_process.h"

namespace batchd::testing {

inline constexpr const char* kNeedsRoot = "needs root: a second uid is made with setresuid in a forked child";

inline bool running_as_root() { return ::geteuid() == 0; }

// The other user of these tests (uid, gid, supplementary groups); run_as() is user_process.h's.
using OtherUser = Credentials;

// Lets every uid connect to a test daemon's socket (its private directory is root's, mode 0700).
inline void open_socket_to_everyone(const std::string& socket_path) {
  ::chmod(std::filesystem::path(socket_path).parent_path().c_str(), 0755);
  ::chmod(socket_path.c_str(), 0666);
}

// A config file with the fashion-mnist-test dataset and `extra` (TOML sections); returns its path.
inline std::string write_test_config(const std::string& name, const std::string& extra) {
  const std::string path = ::testing::TempDir() + name + "-" + std::to_string(::getpid()) + ".toml";
  std::ofstream out(path);
  out << extra
      << "\n[datasets.fashion-mnist-test]\nformat = \"idx\"\nimages = \"" FMNIST_DIR
         "/t10k-images-idx3-ubyte.gz\"\nlabels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
  return path;
}

}  // namespace batchd::testing
