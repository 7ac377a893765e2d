// other_user.h — helpers for tests about who may do what: run part of a test as another uid, let that uid reach
// a test daemon's socket, and write a daemon config with extra keys.
//
// run_as() forks; the child drops to the given uid, gid and supplementary groups (setgroups, setresgid, setresuid:
// only root can), runs the function and writes its verdict ("" = fine, else what went wrong) to a pipe that the
// parent returns. gtest assertions do not cross the fork: the function returns strings instead. Tests that need
// it skip, saying why, unless they run as root (`if (!running_as_root()) GTEST_SKIP() << kNeedsRoot;`).
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

namespace batchd::testing {

inline constexpr uid_t kNobody = 65534;   // Debian's nobody
inline constexpr gid_t kNogroup = 65534;  // and nogroup
inline constexpr const char* kNeedsRoot = "needs root: a second uid is made with setresuid in a forked child";

inline bool running_as_root() { return ::geteuid() == 0; }

struct OtherUser {
  uid_t uid = kNobody;
  gid_t gid = kNogroup;
  std::vector<gid_t> groups;  // supplementary groups
};

// Runs `fn` in a child process as `user`; returns its verdict, or why the child produced none.
inline std::string run_as(const OtherUser& user, const std::function<std::string()>& fn, int timeout_s = 60) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return "pipe2 failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(p[0]);
    std::string verdict;
    if (::setgroups(user.groups.size(), user.groups.data()) != 0 || ::setresgid(user.gid, user.gid, user.gid) != 0 ||
        ::setresuid(user.uid, user.uid, user.uid) != 0) {
      verdict = "cannot become uid " + std::to_string(user.uid);
    } else {
      verdict = fn();
    }
    for (size_t off = 0; off < verdict.size();) {
      const ssize_t n = ::write(p[1], verdict.data() + off, verdict.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    std::_Exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd ready{p[0], POLLIN, 0};
    if (::poll(&ready, 1, timeout_s * 1000) != 1) {
      ::kill(child, SIGKILL);
      out = "the child (uid " + std::to_string(user.uid) + ") did not finish within " + std::to_string(timeout_s) +
            " s; it said so far: " + out;
      break;
    }
    const ssize_t n = ::read(p[0], buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(p[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status)) out += " (the child was killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  return out;
}

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
