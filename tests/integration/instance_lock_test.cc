// The socket's lock file (issue 23, finding 8): the daemon opens "<socket>.lock" without following a symlink and
// refuses one that is not its own, so another user can neither have it overwrite a file (a root daemon wrote its pid
// through a planted symlink) nor put words in its mouth (a planted lock's text was quoted as the other daemon's
// pid). Each case starts a real batchd that must exit 1 at once; on a daemon that starts anyway the test fails
// after 10 s instead of hanging. Nothing depends on fs.protected_symlinks: the links are the test's own.
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "other_user.h"
#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

namespace fs = std::filesystem;

std::string describe(int status) {
  return WIFSIGNALED(status) ? std::string("killed by ") + ::strsignal(WTERMSIG(status))
                             : "exit " + std::to_string(WEXITSTATUS(status));
}

// Runs batchd on `socket` (the embedded config, no cache); its exit status (124: still running after 10 s) and output.
batchd::testing::Run run_batchd(const std::string& socket) {
  const std::string cmd = std::string("timeout 10 " BATCHD_BIN_DIR "/batchd --cache-dir '' --workers 1 --socket ") +
                          socket + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p)) out += buf;
  return {WEXITSTATUS(::pclose(p)), out};
}

std::string contents(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(InstanceLockTest, ALockThatIsASymlinkIsRefusedAndNothingIsWrittenThroughIt) {
  TempDir dir("lock-symlink");
  const std::string target = dir.path + "/precious", socket = dir.path + "/batchd.sock";
  std::ofstream(target) << "precious\n";
  fs::create_symlink(target, socket + ".lock");
  const batchd::testing::Run run = run_batchd(socket);
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("lock file " + socket + ".lock is a symbolic link, which batchd does not follow"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("remove it (rm " + socket + ".lock)"), std::string::npos) << run.out;
  EXPECT_EQ(contents(target), "precious\n") << "the daemon wrote through the link";
  EXPECT_FALSE(fs::exists(socket)) << "the daemon started";
}

TEST(InstanceLockTest, ALockPlantedByAnotherUserIsRefusedNamingItsOwnerWithoutQuotingIt) {
  SKIP_UNLESS_ROOT();
  TempDir dir("lock-planted");
  ASSERT_EQ(::chmod(dir.path.c_str(), 01777), 0);  // a socket in a directory anyone can write (/tmp, say)
  const std::string socket = dir.path + "/batchd.sock", lock = socket + ".lock";
  const std::string text = "4242 (run rm -rf / to fix)\n";
  // The squatter plants the lock, holds its flock while the daemon starts, then lets go.
  UserProcess squatter(Credentials{}, [&](int out, int in) {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::write(fd, text.data(), text.size()) < 0 || ::flock(fd, LOCK_EX) != 0) {
      return UserProcess::send(out, std::string("FAIL ") + std::strerror(errno) + "\n");
    }
    UserProcess::send(out, "HELD\n");
    UserProcess::wait_for_release(in);
  });
  ASSERT_EQ(squatter.read_line(), "HELD") << squatter.finish();
  for (bool held : {true, false}) {
    SCOPED_TRACE(held ? "while the squatter holds its flock" : "after it let go");
    const batchd::testing::Run run = run_batchd(socket);
    EXPECT_EQ(run.exit_code, 1) << run.out;
    EXPECT_NE(run.out.find("lock file " + lock + " is owned by uid 65534 (nobody), not by the daemon's uid 0 (root)"),
              std::string::npos)
        << run.out;
    EXPECT_NE(run.out.find("keep the socket's directory writable only by the daemon's user"), std::string::npos)
        << run.out;
    EXPECT_EQ(run.out.find("rm -rf"), std::string::npos) << "the planted text was quoted: " << run.out;
    EXPECT_EQ(contents(lock), text) << "the daemon wrote into the planted file";
    if (held) {
      EXPECT_EQ(squatter.finish(), "");
    }
  }
}

TEST(InstanceLockTest, AHeldLockIsQuotedOnlyWhenItHoldsAPid) {
  TempDir dir("lock-garbage");
  const std::string socket = dir.path + "/batchd.sock", lock = socket + ".lock";
  std::ofstream(lock) << "not a pid: some secret\n";
  ::chmod(lock.c_str(), 0600);
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // this process plays the daemon that holds it
  batchd::testing::Run run = run_batchd(socket);
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("another batchd (its pid is not in " + lock + ") is already serving " + socket),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("secret"), std::string::npos) << run.out;
  std::ofstream(lock) << "31337\n";
  run = run_batchd(socket);
  EXPECT_NE(run.out.find("another batchd (pid 31337) is already serving " + socket), std::string::npos) << run.out;
  ::close(fd);
}

// Issue 45 (2): a SIGTERM in the first ~100 ms of start-up (after the lock files, before the signal handlers) ended
// the daemon by the signal's default action (exit 143) and left /dev/shm/batchd.<instance>.lock. Now the stop
// signals wait, blocked, until the handlers exist: at any moment a SIGTERM ends in a clean exit, or kills a daemon
// that had created nothing yet; no lock file is left either way.
TEST(InstanceLockTest, ASigtermAtAnyMomentOfStartUpLeavesNoLockFile) {
  auto locks = [] {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator("/dev/shm")) {
      const std::string n = e.path().filename().string();
      if (n.starts_with("batchd.") && n.ends_with(".lock")) names.insert(n);
    }
    return names;
  };
  TempDir dir("lock-sigterm");
  const std::string socket = dir.path + "/batchd.sock";
  int clean = 0;
  for (int delay_ms = 0; delay_ms <= 200; delay_ms += 8) {
    const auto before = locks();
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execl(BATCHD_BIN_DIR "/batchd", "batchd", "--cache-dir", "", "--workers", "1", "--socket", socket.c_str(),
              "--log-level", "off", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ASSERT_EQ(::kill(pid, SIGTERM), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const bool exited_clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    clean += exited_clean;
    for (const std::string& n : locks()) {
      // Only this daemon's: another test's daemon (ctest -j) may hold a lock meanwhile, or remove it before it is
      // read. Each lock names its socket ("batchd pid N serving SOCKET"), written before the file gets its name
      // (segment_instance.cc: O_TMPFILE, then linkat).
      std::ifstream in("/dev/shm/" + n);
      if (!in) continue;  // gone since it was listed: not a leak
      std::string text;
      std::getline(in, text);
      const bool ours = text.ends_with(" serving " + socket);
      EXPECT_TRUE(before.contains(n) || !ours) << "/dev/shm/" << n << " left by a SIGTERM " << delay_ms
                                               << " ms into start-up ("
                                               << (exited_clean ? "exit 0" : describe(status)) << ")";
    }
    EXPECT_TRUE(exited_clean || (WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)) << describe(status);
    EXPECT_FALSE(fs::exists(socket)) << delay_ms << " ms";
  }
  EXPECT_GT(clean, 10) << "too few runs reached the lock files for the test to mean anything";
}

}  // namespace
}  // namespace batchd::testing
