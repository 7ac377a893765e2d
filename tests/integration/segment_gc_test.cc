// Garbage collection never deletes live data (issue 14, finding 4): a daemon started under another name keeps its
// segments; daemons in two pid namespaces (both pid 1) neither share names nor remove each other's segments; a
// segment whose instance lock is held is kept, and removed once the holder is gone; `batchctl shm --gc` as an
// ordinary user removes neither an in-use torch_* file nor another user's file. Tests that need root (pid
// namespaces, other uids) skip otherwise.
#include <google/protobuf/util/json_util.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "daemon_fixture.h"
#include "user_process.h"

namespace batchd::testing {
namespace {

namespace fs = std::filesystem;

// An instance id no daemon has, distinct per test process.
std::string fake_instance(uint64_t tag) {
  char id[17];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(tag << 32 | static_cast<unsigned>(::getpid())));
  return id;
}

// Reads a few batches; "" if they came.
std::string reads(Stream& stream, int batches) {
  for (int i = 0; i < batches; ++i) {
    auto b = stream.next();
    if (!b.ok()) return b.error().message();
    if (!*b) return "the stream ended early";
  }
  return "";
}

Stream open_file_system(const std::string& socket, Client* keep) {
  auto client = Client::connect(socket);
  EXPECT_TRUE(client.ok()) << client.error().message();
  auto o = fmnist_options();
  o.strategy = SharingStrategy::kFileSystem;
  o.num_epochs = 10;
  auto stream = client->open_stream(o);
  EXPECT_TRUE(stream.ok()) << stream.error().message();
  *keep = std::move(client).value();
  return std::move(stream).value();
}

TEST(SegmentGcTest, ADaemonStartedUnderAnotherNameKeepsItsLiveSegments) {
  const fs::path dir = ::testing::TempDir() + "renamed-" + std::to_string(::getpid());
  fs::create_directories(dir);
  fs::create_symlink(BATCHD_BIN_DIR "/batchd", dir / "dataserver");
  ::setenv("BATCHD_BIN", (dir / "dataserver").c_str(), 1);
  auto renamed = start_daemon("file_system", 1);
  ::setenv("BATCHD_BIN", BATCHD_BIN_DIR "/batchd", 1);
  std::string comm;
  std::getline(std::ifstream("/proc/" + std::to_string(renamed.pid()) + "/comm"), comm);
  ASSERT_EQ(comm, "dataserver") << "the daemon must run under another name for this test";
  Client client = std::move(Client::connect(renamed.socket_path())).value();
  Stream stream = open_file_system(renamed.socket_path(), &client);
  ASSERT_EQ(reads(stream, 2), "");
  const std::string path = stream.info().segment_name;
  ASSERT_TRUE(fs::exists(path));

  auto other = start_daemon("file_system", 1);  // its start-up clean-up runs now
  EXPECT_TRUE(fs::exists(path)) << "another daemon's start-up removed a live segment";
  const auto run = batchctl("--socket " + other.socket_path() + " shm --gc");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(fs::exists(path)) << "batchctl shm --gc removed a live segment: " << run.out;
  EXPECT_EQ(reads(stream, 10), "");
  fs::remove_all(dir);
}

// A daemon that is pid 1 of a pid namespace of its own (as in a container), sharing this /dev/shm.
class PidNamespaceDaemon {
 public:
  // "" when serving; else why not ("SKIP ..." when this kernel or user cannot make pid namespaces).
  std::string start() {
    char tmpl[] = "/tmp/batchd-pidns-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return "mkdtemp failed";
    dir_ = tmpl;
    socket_ = dir_ + "/batchd.sock";
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return "pipe failed";
    keeper_ = ::fork();
    if (keeper_ == 0) {  // stays in this namespace: forks the daemon into a new one and waits for it
      ::close(pipe_fds[0]);
      std::string line;
      if (::unshare(CLONE_NEWPID) != 0) {
        line = std::string("SKIP cannot make a pid namespace: ") + std::strerror(errno);
        (void)!::write(pipe_fds[1], line.data(), line.size());
        std::_Exit(0);
      }
      const pid_t daemon = ::fork();
      if (daemon == 0) {
        ::execl(BATCHD_BIN_DIR "/batchd", "batchd", "--socket", socket_.c_str(), "--shm-strategy", "file_system",
                "--workers", "1", "--log-level", "warn", nullptr);
        std::_Exit(127);
      }
      line = std::to_string(daemon);
      (void)!::write(pipe_fds[1], line.data(), line.size());
      ::close(pipe_fds[1]);
      ::waitpid(daemon, nullptr, 0);
      std::_Exit(0);
    }
    ::close(pipe_fds[1]);
    char buf[256] = {};
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof(buf) - 1);
    ::close(pipe_fds[0]);
    const std::string got(buf, n > 0 ? static_cast<size_t>(n) : 0);
    if (got.rfind("SKIP", 0) == 0) return got;
    daemon_ = std::atoi(got.c_str());
    if (daemon_ <= 0) return "no daemon pid from the keeper: '" + got + "'";
    return eventually([&] { return Client::connect(socket_).ok(); }, std::chrono::seconds(30))
               ? ""
               : "the daemon in its pid namespace did not serve " + socket_;
  }
  ~PidNamespaceDaemon() {
    if (daemon_ > 0) ::kill(daemon_, SIGTERM);  // a handler is installed, so pid 1 of its namespace gets it
    if (keeper_ > 0) ::waitpid(keeper_, nullptr, 0);
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  const std::string& socket() const { return socket_; }

 private:
  std::string dir_, socket_;
  pid_t keeper_ = -1;
  pid_t daemon_ = -1;
};

TEST(SegmentGcTest, DaemonsInTwoPidNamespacesNeitherShareNamesNorRemoveEachOthersSegments) {
  SKIP_UNLESS_ROOT();
  PidNamespaceDaemon a, b;
  const std::string why = a.start();
  if (why.rfind("SKIP ", 0) == 0) GTEST_SKIP() << why.substr(5);
  ASSERT_EQ(why, "");
  ASSERT_EQ(daemon_status(a.socket()).daemon_pid, 1) << "pid 1 of its own namespace";
  Client client_a = std::move(Client::connect(a.socket())).value();
  Stream stream_a = open_file_system(a.socket(), &client_a);
  ASSERT_EQ(reads(stream_a, 2), "");
  const std::string path_a = stream_a.info().segment_name;

  ASSERT_EQ(b.start(), "");  // b's start-up clean-up runs now; b is pid 1 too
  ASSERT_EQ(daemon_status(b.socket()).daemon_pid, 1);
  EXPECT_TRUE(fs::exists(path_a)) << "the second pid-1 daemon removed the first one's live segment";
  Client client_b = std::move(Client::connect(b.socket())).value();
  Stream stream_b = open_file_system(b.socket(), &client_b);
  EXPECT_NE(stream_b.info().segment_name, path_a) << "two instances, one name";
  const auto run = batchctl("--socket " + b.socket() + " shm --gc");
  EXPECT_TRUE(fs::exists(path_a)) << run.out;
  EXPECT_TRUE(fs::exists(stream_b.info().segment_name)) << run.out;
  EXPECT_EQ(reads(stream_a, 10), "");
  EXPECT_EQ(reads(stream_b, 10), "");
}

TEST(SegmentGcTest, ASegmentWhoseInstanceLockIsHeldStaysUntilTheHolderIsGone) {
  // As another pid namespace sharing /dev/shm would look: a lock held by a process that is not named batchd and
  // whose pid appears nowhere in the names.
  const std::string id = fake_instance(0x5eed0000);
  const std::string segment = "/dev/shm/batchd." + id + ".1", lock = "/dev/shm/batchd." + id + ".lock";
  std::ofstream(segment) << std::string(4096, 'x');
  std::ofstream(lock) << "held by a test\n";
  UserProcess holder([&](int out, int in) {
    const int fd = ::open(lock.c_str(), O_RDONLY);
    UserProcess::send(out, ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? "locked\n" : "cannot lock\n");
    UserProcess::wait_for_release(in);
  });
  ASSERT_EQ(holder.read_line(), "locked");

  auto daemon = start_daemon();  // its start-up clean-up runs now
  EXPECT_TRUE(fs::exists(segment)) << "the daemon's start-up removed a segment whose instance is alive";
  auto run = batchctl("--socket " + daemon.socket_path() + " shm --gc");
  EXPECT_TRUE(fs::exists(segment)) << run.out;

  EXPECT_EQ(holder.finish(), "");  // the holder exits: the kernel drops its lock
  run = batchctl("--socket " + daemon.socket_path() + " shm --gc --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  wire::ShmReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &report).ok()) << run.out;
  // (A daemon that another test starts meanwhile may have collected them first.)
  EXPECT_FALSE(fs::exists(segment)) << "the instance is gone: its segment is an orphan\n" << run.out;
  EXPECT_FALSE(fs::exists(lock)) << run.out;
  for (const auto& f : report.orphans()) EXPECT_NE(f.instance_id(), id) << "kept: " << f.kept();
  fs::remove(segment);
  fs::remove(lock);
}

TEST(SegmentGcTest, SegmentsOfADeadInstanceWhoseLockAnotherUserHoldsAreShownWithTheHolder) {
  // The leak the lock files allow: any user may hold a dead instance's lock, and nothing collects its segments
  // while they do. batchctl shm shows them, with who holds the lock, in text and JSON (issue 23, item 11).
  const std::string id = fake_instance(0x4e1d0000);
  const std::string segment = "batchd." + id + ".1", lock = "/dev/shm/batchd." + id + ".lock";
  std::ofstream("/dev/shm/" + segment) << std::string(4096, 'x');
  std::ofstream(lock) << "held by a test\n";  // mode 0644: anyone may open it to lock it
  const Credentials who = ::geteuid() == 0 ? Credentials{} : Credentials{::geteuid(), ::getegid(), {}};
  UserProcess holder(who, [&](int out, int in) {
    const int fd = ::open(lock.c_str(), O_RDONLY);
    UserProcess::send(out, ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? std::to_string(::getpid()) + "\n" : "cannot lock\n");
    UserProcess::wait_for_release(in);
  });
  const std::string holder_pid = holder.read_line();
  ASSERT_NE(holder_pid, "cannot lock");

  auto daemon = start_daemon();
  auto run = batchctl("--socket " + daemon.socket_path() + " shm --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  wire::ShmReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &report).ok()) << run.out;
  const wire::ShmFile* shown = nullptr;
  for (const auto& f : report.held()) {
    if (f.name() == segment) shown = &f;
  }
  ASSERT_NE(shown, nullptr) << "the held instance's segment is missing from the report\n" << run.out;
  EXPECT_EQ(shown->instance_id(), id);
  EXPECT_EQ(shown->bytes(), 4096u);
  EXPECT_EQ(std::to_string(shown->lock_holder_pid()), holder_pid);
  EXPECT_NE(shown->kept().find("held by pid " + holder_pid), std::string::npos) << shown->kept();
  for (const auto& f : report.held()) EXPECT_NE(f.instance_id(), report.instance_id()) << "the daemon's own";

  run = batchctl("--socket " + daemon.socket_path() + " shm");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const size_t line = run.out.find(segment);
  ASSERT_NE(line, std::string::npos) << run.out;
  EXPECT_NE(run.out.find("held by pid " + holder_pid, line), std::string::npos) << run.out;
  EXPECT_TRUE(fs::exists("/dev/shm/" + segment)) << "shown, never removed";
  holder.release();
  EXPECT_EQ(holder.finish(), "");
  fs::remove("/dev/shm/" + segment);
  fs::remove(lock);
}

TEST(SegmentGcTest, GcAsAnOrdinaryUserRemovesNeitherAnInUseTorchFileNorAnotherUsersFile) {
  SKIP_UNLESS_ROOT();
  constexpr uid_t kUser = 65534, kOther = 65533;

  // Not sticky, writable by all: the kernel would let anyone unlink anything here; only batchd's rule protects.
  const fs::path dir = ::testing::TempDir() + "gc-user-" + std::to_string(::getpid());
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);
  const std::string tag = std::to_string(::getpid());
  const std::string theirs_busy = "torch_" + tag + "_theirs_busy", theirs_idle = "torch_" + tag + "_theirs_idle";
  const std::string theirs_orphan = "batchd." + fake_instance(0x0ddba11) + ".1", mine = "torch_" + tag + "_mine";
  for (const auto& [name, uid] :
       {std::pair{theirs_busy, kOther}, {theirs_idle, kOther}, {theirs_orphan, kOther}, {mine, kUser}}) {
    std::ofstream(dir / name) << std::string(1000, 'x');
    ASSERT_EQ(::chown((dir / name).c_str(), uid, kNogroup), 0);
  }
  // The other user's trainer still uses its torch_* file; the ordinary user cannot see that process's fds.
  UserProcess trainer({kOther, kNogroup, {}}, [&](int out, int in) {
    const int fd = ::open((dir / theirs_busy).c_str(), O_RDONLY);
    UserProcess::send(out, fd >= 0 ? "ready\n" : "cannot open\n");
    UserProcess::wait_for_release(in);
  });
  ASSERT_EQ(trainer.read_line(), "ready");

  const std::string cmd = std::string(BATCHD_BIN_DIR "/batchctl --socket /tmp/batchd-no-such-dir/batchd.sock shm") +
                          " --shm-dir " + dir.string() + " --gc --include-foreign --json";
  UserProcess gc({kUser, kNogroup, {}}, [&](int out, int) {
    ::dup2(out, STDOUT_FILENO);
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    std::_Exit(127);
  });
  const std::string json = gc.finish();
  EXPECT_TRUE(fs::exists(dir / theirs_busy)) << "an in-use torch_* file of another user was removed\n" << json;
  EXPECT_TRUE(fs::exists(dir / theirs_idle)) << "another user's file was removed\n" << json;
  EXPECT_TRUE(fs::exists(dir / theirs_orphan)) << "another user's orphan was removed\n" << json;
  EXPECT_FALSE(fs::exists(dir / mine)) << "the user's own unused leftover stays\n" << json;
  wire::ShmReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &report).ok()) << json;
  EXPECT_EQ(std::vector<std::string>(report.removed().begin(), report.removed().end()), std::vector<std::string>{mine});
  auto kept_because = [&](const auto& files, const std::string& name) {
    for (const auto& f : files) {
      if (f.name() == name) return f.kept();
    }
    return std::string("(not listed)");
  };
  EXPECT_NE(kept_because(report.foreign(), theirs_busy).find("owned by uid 65533"), std::string::npos) << json;
  EXPECT_NE(kept_because(report.foreign(), theirs_idle).find("owned by uid 65533"), std::string::npos) << json;
  EXPECT_NE(kept_because(report.orphans(), theirs_orphan).find("owned by uid 65533"), std::string::npos) << json;
  trainer.release();
  EXPECT_EQ(trainer.finish(), "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace batchd::testing
