// Who may open a file_system segment (issue 14, finding 1): only the stream's own uid, read-only unless the stream
// is writable; the file stays the daemon's, mode 0600 plus one ACL entry. For a root daemon with a socket group and
// for a daemon that runs as its own user; and a clear refusal where /dev/shm has no POSIX ACLs. A file_descriptor
// segment (a memfd, mode 0600) cannot be reopened read-write by a client of another uid (issue 23, finding 3).
// Every test needs root (it runs clients as other uids) and skips otherwise.
#include <acl/libacl.h>
#include <sched.h>
#include <sys/acl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "daemon_fixture.h"
#include "user_process.h"

namespace batchd::testing {
namespace {

constexpr uid_t kVictim = 65534;    // nobody: opens the stream
constexpr uid_t kAttacker = 65533;  // another member of the same groups


std::string config_with(const std::string& daemon_section) {
  const std::string path = ::testing::TempDir() + "segment-access-" + std::to_string(::getpid()) + ".toml";
  std::ofstream(path) << "[daemon]\n" << daemon_section << "\n[datasets.fashion-mnist-test]\nformat = \"idx\"\n"
                      << "images = \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\"\n"
                      << "labels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
  return path;
}

tools::SpawnedDaemon start(const std::string& config, uid_t uid = static_cast<uid_t>(-1),
                           gid_t gid = static_cast<gid_t>(-1)) {
  ::setenv("BATCHD_BIN", BATCHD_BIN_DIR "/batchd", 0);
  tools::SpawnOptions options;
  options.workers = 1;
  options.strategy = "file_system";
  options.config_path = config;
  options.uid = uid;
  options.gid = gid;
  auto daemon = tools::SpawnedDaemon::start(options);
  if (!daemon.ok()) {
    ADD_FAILURE() << daemon.error().message();
    std::abort();
  }
  // Other uids must reach the socket (its mode and group are the daemon's business).
  std::filesystem::permissions(std::filesystem::path(daemon->socket_path()).parent_path(),
                               std::filesystem::perms::others_exec | std::filesystem::perms::group_exec,
                               std::filesystem::perm_options::add);
  return std::move(daemon).value();
}

std::string acl_of(const std::string& path) {
  if (::acl_extended_file(path.c_str()) <= 0) return "(no ACL)";
  acl_t acl = ::acl_get_file(path.c_str(), ACL_TYPE_ACCESS);
  char* text = ::acl_to_any_text(acl, nullptr, ',', TEXT_NUMERIC_IDS);
  std::string out(text);
  ::acl_free(text);
  ::acl_free(acl);
  return out;
}

// "" if opening `path` with `flags` fails with EACCES, else what happened.
std::string refused(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return "uid " + std::to_string(::getuid()) + " opened " + path + (flags == O_RDWR ? " read-write; " : " read-only; ");
  }
  return errno == EACCES ? "" : path + ": " + std::strerror(errno) + " instead of EACCES; ";
}

// The victim opens a file_system stream (writable or not) and reads from it; while it holds the stream, the
// segment's owner, mode and ACL are checked and the attacker tries to open it both ways.
void check_segment_access(const tools::SpawnedDaemon& daemon, uid_t daemon_uid, const Credentials& victim,
                          const Credentials& attacker, bool writable) {
  SCOPED_TRACE(writable ? "writable stream" : "read-only stream");
  const std::string socket = daemon.socket_path();
  UserProcess holder(victim, [&](int out, int in) {
    auto client = Client::connect(socket);
    if (!client.ok()) return UserProcess::send(out, "FAIL " + client.error().message() + "\n");
    auto o = fmnist_options();
    o.strategy = SharingStrategy::kFileSystem;
    o.writable = writable;
    auto stream = client->open_stream(o);
    if (!stream.ok()) return UserProcess::send(out, "FAIL " + stream.error().message() + "\n");
    auto batch = stream->next();
    if (!batch.ok() || !*batch) return UserProcess::send(out, "FAIL no first batch\n");
    const std::string path = stream->info().segment_name;
    std::string own;
    if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) ::close(fd);
    else own += "its own uid cannot open it read-only; ";
    const int rw = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (rw >= 0) ::close(rw);
    if ((rw >= 0) != writable) own += writable ? "cannot open it read-write; " : "opened a read-only stream read-write; ";
    UserProcess::send(out, "PATH " + path + "\n");
    UserProcess::wait_for_release(in);
    batch = std::optional<Batch>();
    for (int i = 0; i < 5 && own.empty(); ++i) {
      auto next = stream->next();
      if (!next.ok() || !*next) own += "the stream broke after the attacker's tries; ";
    }
    UserProcess::send(out, own);
  });
  const std::string first = holder.read_line();
  ASSERT_EQ(first.rfind("PATH ", 0), 0u) << first << holder.finish();
  const std::string path = first.substr(5);

  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_uid, daemon_uid) << "the segment stays the daemon's";
  EXPECT_EQ(st.st_mode & 0707, 0600u) << std::oct << st.st_mode;
  const std::string perm = writable ? "rw-" : "r--";
  EXPECT_EQ(acl_of(path), "user::rw-,user:" + std::to_string(victim.uid) + ":" + perm + ",group::---,mask::" + perm +
                              ",other::---");
  EXPECT_EQ(run_as(attacker, [&] { return refused(path, O_RDONLY) + refused(path, O_RDWR); }), "")
      << "another member of the socket group";
  EXPECT_EQ(holder.finish(), "") << "the victim";
}

TEST(SegmentAccessTest, RootDaemonWithASocketGroupServesOnlyTheStreamsOwnUid) {
  SKIP_UNLESS_ROOT();
  auto daemon = start(config_with("socket_group = \"nogroup\""));
  const Credentials victim{kVictim, kNogroup, {kNogroup}}, attacker{kAttacker, kNogroup, {kNogroup}};
  check_segment_access(daemon, 0, victim, attacker, false);
  check_segment_access(daemon, 0, victim, attacker, true);
}

TEST(SegmentAccessTest, DaemonRunningAsItsOwnUserServesOnlyTheStreamsOwnUid) {
  SKIP_UNLESS_ROOT();
  // The packaged set-up: the daemon runs as its own user and group, and trainers join that group.
  constexpr uid_t kDaemonUid = 1;  // Debian's "daemon" user and group
  constexpr gid_t kDaemonGid = 1;
  auto daemon = start(config_with(""), kDaemonUid, kDaemonGid);
  const Credentials victim{kVictim, kNogroup, {kNogroup, kDaemonGid}}, attacker{kAttacker, kNogroup, {kDaemonGid}};
  check_segment_access(daemon, kDaemonUid, victim, attacker, false);
  check_segment_access(daemon, kDaemonUid, victim, attacker, true);
}

// Issue 23, finding 3: a file_descriptor segment is a memfd of mode 0600, the daemon's. Run as a client of another
// uid: it opens a read-only stream over a raw connection (keeping the fd the daemon passes, as an attacker would) and
// tries to reopen that fd read-write through /proc/self/fd/N, which a memfd's default mode 0777 allowed (and so
// writes into the batches of every subscriber of the segment). "" if it cannot, else what it could do.
std::string reopen_memfd_read_write(const std::string& socket, uid_t daemon_uid) {
  RawConnection raw(socket);
  raw.send_request(fmnist_open_request(10, wire::FILE_DESCRIPTOR));
  std::vector<wire::UniqueFd> fds;
  auto opened = raw.read_reply(&fds);
  if (!opened || !opened->has_stream_opened()) return "no StreamOpened; ";
  if (fds.size() != 1) return std::to_string(fds.size()) + " fds came with StreamOpened; ";
  std::string out;
  struct stat st {};
  if (::fstat(fds[0].get(), &st) != 0 || st.st_uid != daemon_uid || (st.st_mode & 07777) != 0600) {
    char mode[16];
    std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    out += std::string("the memfd has mode ") + mode + " and uid " + std::to_string(st.st_uid) + "; ";
  }
  const std::string self = "/proc/self/fd/" + std::to_string(fds[0].get());
  if (const int rw = ::open(self.c_str(), O_RDWR | O_CLOEXEC); rw >= 0) {
    ::close(rw);
    out += "uid " + std::to_string(::getuid()) + " reopened its read-only segment fd read-write; ";
  } else if (errno != EACCES) {
    out += self + ": " + std::strerror(errno) + " instead of EACCES; ";
  }
  return out;
}

TEST(SegmentAccessTest, AMemfdSegmentCannotBeReopenedReadWriteByAClientOfAnotherUid) {
  SKIP_UNLESS_ROOT();
  const Credentials client{kVictim, kNogroup, {kNogroup, 1}};
  {
    auto daemon = start(config_with("socket_group = \"nogroup\""));
    EXPECT_EQ(run_as(client, [&] { return reopen_memfd_read_write(daemon.socket_path(), 0); }), "") << "root daemon";
  }
  auto daemon = start(config_with(""), /*uid=*/1, /*gid=*/1);  // as its own user (Debian's "daemon")
  EXPECT_EQ(run_as(client, [&] { return reopen_memfd_read_write(daemon.socket_path(), 1); }), "")
      << "daemon running as uid 1";
}

TEST(SegmentAccessTest, FileSystemIsRefusedWhereShmHasNoAcls) {
  SKIP_UNLESS_ROOT();
  // In a private mount namespace /dev/shm is a ramfs, which has no POSIX ACLs; the daemon (and its socket, in /tmp)
  // is started from there, and a client of another uid asks for a file_system stream.
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    auto say = [&](const std::string& s) { (void)!::write(report[1], s.data(), s.size()); };
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("none", "/dev/shm", "ramfs", 0, nullptr) != 0) {
      say(std::string("SKIP cannot mount a ramfs on /dev/shm in a new mount namespace: ") + std::strerror(errno));
      std::_Exit(0);
    }
    {
      auto daemon = start(config_with("socket_group = \"nogroup\""));
      say(run_as({kVictim, kNogroup, {kNogroup}}, [&] {
        auto client = Client::connect(daemon.socket_path());
        auto o = fmnist_options();
        o.strategy = SharingStrategy::kFileSystem;
        auto stream = client.ok() ? client->open_stream(o) : Result<Stream>(client.error());
        return stream.ok() ? std::string("OPENED") : "ERROR " + stream.error().message();
      }));
    }  // the daemon is stopped here, in the namespace it was started from
    std::_Exit(0);
  }
  ::close(report[1]);
  std::string out;
  char buf[1024];
  ssize_t n;
  while ((n = ::read(report[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(report[0]);
  ::waitpid(child, nullptr, 0);
  if (out.rfind("SKIP ", 0) == 0) GTEST_SKIP() << out.substr(5);
  EXPECT_EQ(out.rfind("ERROR ", 0), 0u) << out;
  EXPECT_NE(out.find("no POSIX ACL support"), std::string::npos) << out;
  EXPECT_NE(out.find("use the file_descriptor strategy"), std::string::npos) << out;
  EXPECT_NE(out.find("mount /dev/shm with POSIX ACL support"), std::string::npos) << out;
}

}  // namespace
}  // namespace batchd::testing
