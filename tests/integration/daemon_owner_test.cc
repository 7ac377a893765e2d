// Whom the client talks to (issue 23, item 7): a real batchd running as another uid (Debian's "daemon", uid 1).
// The client reads the daemon's pid and uid from the kernel (SO_PEERCRED); a client that requires an owner
// (ConnectOptions::expected_owner, $BATCHD_EXPECT_OWNER) refuses a daemon of another uid, naming both; without one,
// a socket in a directory other users can write gets a warning, once, on stderr. batchctl status names the
// daemon's uid. Every test needs root (it starts the daemon as another uid) and skips otherwise.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "daemon_fixture.h"
#include "user_process.h"

namespace batchd::testing {
namespace {

constexpr uid_t kDaemonUid = 1;  // Debian's "daemon" user and group
constexpr gid_t kDaemonGid = 1;

class DaemonOwnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_UNLESS_ROOT();
    ::setenv("BATCHD_BIN", BATCHD_BIN_DIR "/batchd", 0);
    tools::SpawnOptions o;
    o.workers = 1;
    o.uid = kDaemonUid;
    o.gid = kDaemonGid;
    o.extra_args = {"--cache-dir", ""};  // uid 1 cannot write the default one
    auto daemon = tools::SpawnedDaemon::start(o);
    ASSERT_TRUE(daemon.ok()) << daemon.error().message();
    daemon_.emplace(std::move(daemon).value());
  }
  void TearDown() override {
    ::unsetenv("BATCHD_EXPECT_OWNER");
    daemon_.reset();
  }
  const std::string& socket() const { return daemon_->socket_path(); }
  std::string dir() const { return std::filesystem::path(socket()).parent_path().string(); }
  ConnectOptions options(const std::string& expected_owner = "") const {
    ConnectOptions o;
    o.socket_path = socket();
    o.expected_owner = expected_owner;
    o.warn = false;
    return o;
  }

  std::optional<tools::SpawnedDaemon> daemon_;
};

TEST_F(DaemonOwnerTest, CredentialsNameTheDaemonsPidAndUid) {
  auto client = Client::connect(options());
  ASSERT_TRUE(client.ok()) << client.error().message();
  const DaemonCredentials& d = client->daemon_credentials();
  EXPECT_EQ(d.pid, daemon_->pid());
  EXPECT_EQ(d.uid, kDaemonUid);
  EXPECT_EQ(d.gid, kDaemonGid);
  EXPECT_EQ(d.user, "daemon");
  EXPECT_EQ(d.warning, "") << "the socket's directory is the daemon's own, mode 0700";
  auto admin = Admin::connect(options());
  ASSERT_TRUE(admin.ok()) << admin.error().message();
  EXPECT_EQ(admin->daemon_credentials().uid, kDaemonUid);
}

TEST_F(DaemonOwnerTest, AnExpectedOwnerThatDiffersFailsNamingBothUids) {
  for (const std::string root : {"root", "0"}) {
    auto client = Client::connect(options(root));
    ASSERT_FALSE(client.ok()) << "a daemon of uid 1 passed for " << root;
    EXPECT_EQ(client.error().code(), ErrorCode::kPermissionDenied);
    const std::string& m = client.error().message();
    EXPECT_NE(m.find("the daemon at " + socket() + " (pid " + std::to_string(daemon_->pid()) +
                     ") runs as uid 1 (daemon), not as uid 0 (root)"),
              std::string::npos)
        << m;
  }
  for (const std::string owner : {"daemon", "1"}) {
    auto client = Client::connect(options(owner));
    EXPECT_TRUE(client.ok()) << owner << ": " << client.error().message();
  }
  auto unknown = Client::connect(options("no-such-user-here"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("'no-such-user-here' is neither a uid nor a user name"), std::string::npos)
      << unknown.error().message();
}

TEST_F(DaemonOwnerTest, TheEnvironmentVariableRequiresAnOwnerForEveryClient) {
  ::setenv("BATCHD_EXPECT_OWNER", "root", 1);
  auto admin = Admin::connect(socket());
  ASSERT_FALSE(admin.ok());
  EXPECT_EQ(admin.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(admin.error().message().find("runs as uid 1 (daemon), not as uid 0 (root) (required by "
                                         "$BATCHD_EXPECT_OWNER)"),
            std::string::npos)
      << admin.error().message();
  auto run = batchctl("--socket " + socket() + " status");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("runs as uid 1 (daemon), not as uid 0 (root)"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("instance"), std::string::npos) << "no status from a daemon refused: " << run.out;
  ::setenv("BATCHD_EXPECT_OWNER", "daemon", 1);
  EXPECT_TRUE(Admin::connect(socket()).ok());
}

TEST_F(DaemonOwnerTest, ASocketInADirectoryOthersCanWriteGetsAWarning) {
  ASSERT_EQ(::chmod(dir().c_str(), 01777), 0);  // as /tmp: sticky does not stop another user binding the name first
  auto client = Client::connect(options());
  ASSERT_TRUE(client.ok()) << client.error().message();
  const std::string& w = client->daemon_credentials().warning;
  EXPECT_NE(w.find("the daemon at " + socket() + " (pid " + std::to_string(daemon_->pid()) +
                   ") runs as uid 1 (daemon)"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find(dir() + " (mode 1777) lets other users create that name first"), std::string::npos) << w;
  EXPECT_NE(w.find("BATCHD_EXPECT_OWNER=daemon"), std::string::npos) << w;
  EXPECT_EQ(Client::connect(options("daemon"))->daemon_credentials().warning, "") << "an owner was required";

  // batchctl names the daemon's uid, and prints the warning once.
  auto run = batchctl("--socket " + socket() + " status");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("socket " + socket() + ": daemon pid " + std::to_string(daemon_->pid()) +
                         ", uid 1 (daemon)"),
            std::string::npos)
      << run.out;
  const size_t first = run.out.find("batchd: warning: the daemon at " + socket());
  EXPECT_NE(first, std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("batchd: warning:", first + 1), std::string::npos) << "warned twice: " << run.out;

  ASSERT_EQ(::chmod(dir().c_str(), 0755), 0);
  EXPECT_EQ(Client::connect(options())->daemon_credentials().warning, "") << "only its owner can write there now";
}

TEST_F(DaemonOwnerTest, NoWarningForTheCallersOwnDaemon) {
  // The same socket directory, world-writable, seen by the daemon's own uid: its daemon is its own.
  ASSERT_EQ(::chmod(dir().c_str(), 01777), 0);
  ::chmod(socket().c_str(), 0666);
  const std::string verdict = run_as({kDaemonUid, kDaemonGid, {}}, [&]() -> std::string {
    auto client = Client::connect(options());
    if (!client.ok()) return client.error().message();
    return client->daemon_credentials().warning;
  });
  EXPECT_EQ(verdict, "");
}

}  // namespace
}  // namespace batchd::testing
