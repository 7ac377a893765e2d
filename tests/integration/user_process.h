// user_process.h — parts of a test that run as another user: a forked child switches to a uid, gid and supplementary
// groups with setresuid/setresgid/setgroups (only root can), runs a function and sends its findings back over a
// pipe. For the tests of what one user may do to another's segments and files; a test calls SKIP_UNLESS_ROOT()
// first, which skips it with the reason when the suite does not run as root.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

namespace batchd::testing {

#define SKIP_UNLESS_ROOT()                                                                                         \
  if (::geteuid() != 0)                                                                                            \
  GTEST_SKIP() << "needs root: the test runs parts of itself as other uids (forked children with setresuid), "     \
                  "and tests run as uid "                                                                          \
               << ::geteuid()

inline constexpr uid_t kNobody = 65534;   // Debian's nobody
inline constexpr gid_t kNogroup = 65534;  // and nogroup

struct Credentials {
  uid_t uid = kNobody;
  gid_t gid = kNogroup;
  std::vector<gid_t> groups;  // supplementary
};

// A child process running `body` as `who` (or as this process's user). body(out, in) writes its findings to `out`
// (send()) and may wait on `in` until the parent calls release(). finish() returns everything the child wrote, after
// it exited ("" if it wrote nothing), with a note if it did not exit with status 0.
class UserProcess {
 public:
  UserProcess(const Credentials& who, const std::function<void(int out, int in)>& body) { start(&who, body); }
  explicit UserProcess(const std::function<void(int out, int in)>& body) { start(nullptr, body); }
  UserProcess(const UserProcess&) = delete;
  UserProcess& operator=(const UserProcess&) = delete;
  ~UserProcess() { finish(); }

  static void send(int fd, const std::string& text) { (void)!::write(fd, text.data(), text.size()); }
  // In the child: blocks until the parent calls release() (or dies).
  static void wait_for_release(int in) {
    char c;
    while (::read(in, &c, 1) > 0) {
    }
  }

  // One line the child sent (without the newline), "" at EOF.
  std::string read_line() {
    std::string line;
    char c;
    while (::read(out_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  // Whether the child closed its end (exited, or about to) within `timeout_s`; if not, it is SIGKILLed.
  bool finished_within(int timeout_s) {
    pollfd ready{out_, POLLHUP, 0};
    for (;;) {
      const int r = ::poll(&ready, 1, timeout_s * 1000);
      if (r == 1 && (ready.revents & POLLHUP)) return true;
      if (r == 1 && (ready.revents & POLLIN)) {  // data before the hang-up: keep it for finish()
        char buf[512];
        const ssize_t n = ::read(out_, buf, sizeof(buf));
        if (n <= 0) return true;
        early_.append(buf, static_cast<size_t>(n));
        continue;
      }
      ::kill(pid_, SIGKILL);
      return false;
    }
  }
  void release() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }
  std::string finish() {
    release();
    if (pid_ <= 0) return "";
    std::string all = std::move(early_);
    char buf[512];
    ssize_t n;
    while ((n = ::read(out_, buf, sizeof(buf))) > 0) all.append(buf, static_cast<size_t>(n));
    ::close(out_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) all += "(the child ended with status " + std::to_string(status) + ")";
    return all;
  }

 private:
  void start(const Credentials* who, const std::function<void(int out, int in)>& body) {
    int up[2], down[2];
    EXPECT_EQ(::pipe2(up, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(down, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(up[0]);
      ::close(down[1]);
      if (who != nullptr && (::setgroups(who->groups.size(), who->groups.data()) != 0 ||
                             ::setresgid(who->gid, who->gid, who->gid) != 0 ||
                             ::setresuid(who->uid, who->uid, who->uid) != 0)) {
        send(up[1], "cannot switch to uid " + std::to_string(who->uid) + "\n");
        std::_Exit(1);
      }
      body(up[1], down[0]);
      std::_Exit(0);
    }
    ::close(up[1]);
    ::close(down[0]);
    out_ = up[0];
    in_ = down[1];
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int in_ = -1;
  std::string early_;  // read by finished_within()
};

// Runs fn as `who` and returns what it returned ("" for success, by convention) plus any note from finish(); if the
// child has not finished within `timeout_s`, it is killed and the verdict says so (a test fails, never hangs).
inline std::string run_as(const Credentials& who, const std::function<std::string()>& fn, int timeout_s = 60) {
  UserProcess child(who, [&](int out, int) { UserProcess::send(out, fn()); });
  if (!child.finished_within(timeout_s)) {
    return "the child (uid " + std::to_string(who.uid) + ") did not finish within " + std::to_string(timeout_s) +
           " s; " + child.finish();
  }
  return child.finish();
}

}  // namespace batchd::testing
