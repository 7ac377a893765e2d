// Who may do what, by the peer's credentials: a second uid (65534, in a forked child: needs root) may not drain or
// shut the daemon down, sees its own streams in full and other users' only as counts; a member of
// daemon.admin_group may drain.
#include <google/protobuf/util/json_util.h>

#include "batchd/wire/convert.h"
#include "daemon_fixture.h"
#include "other_user.h"

namespace batchd::testing {
namespace {

// "" if `result` failed with kPermissionDenied and a message that says who may, else what happened instead.
template <typename T>
std::string expect_refused(const Result<T>& result, const std::string& what) {
  if (result.ok()) return what + " was accepted from uid " + std::to_string(::getuid());
  if (result.error().code() != ErrorCode::kPermissionDenied) return what + ": wrong error: " + result.error().message();
  const std::string& m = result.error().message();
  for (const char* needle : {"admin request", "daemon.admin_group", "uid 65534"}) {
    if (m.find(needle) == std::string::npos) return what + ": the refusal does not say '" + needle + "': " + m;
  }
  return "";
}

TEST(AuthorizationTest, NonAdminCannotShutdownOrDrainAndKeepsItsConnection) {
  if (!running_as_root()) GTEST_SKIP() << kNeedsRoot;
  auto daemon = start_daemon();
  open_socket_to_everyone(daemon.socket_path());
  const std::string socket = daemon.socket_path();
  const std::string verdict = run_as({}, [&]() -> std::string {
    auto admin = Admin::connect(socket);
    if (!admin.ok()) return "connect: " + admin.error().message();
    if (auto v = expect_refused(admin->shutdown(), "shutdown"); !v.empty()) return v;
    if (auto v = expect_refused(admin->drain(), "drain"); !v.empty()) return v;
    auto status = admin->status();  // the same connection still serves
    if (!status.ok()) return "status after the refusals: " + status.error().message();
    if (status->admin) return "status says uid 65534 is an admin";
    return "";
  });
  EXPECT_EQ(verdict, "");
  const DaemonStatus after = daemon_status(socket);
  EXPECT_FALSE(after.draining) << "a refused drain must not drain";
  EXPECT_TRUE(after.admin) << "root is an admin";
  auto stream = Client::connect(socket)->open_stream(fmnist_options());
  ASSERT_TRUE(stream.ok()) << "a refused shutdown must not stop the daemon: " << stream.error().message();
  EXPECT_TRUE(stream->next().ok());
}

TEST(AuthorizationTest, MemberOfTheAdminGroupMayDrain) {
  if (!running_as_root()) GTEST_SKIP() << kNeedsRoot;
  const group* users = ::getgrnam("users");
  ASSERT_NE(users, nullptr) << "Debian's group 'users' (gid 100)";
  const gid_t admin_gid = users->gr_gid;
  auto daemon =
      start_daemon("", 2, {"--config", write_test_config("admin-group", "[daemon]\nadmin_group = \"users\"\n")});
  open_socket_to_everyone(daemon.socket_path());
  const std::string socket = daemon.socket_path();
  // Without the group: refused (the refusal names the group to join).
  EXPECT_EQ(run_as({},
                   [&]() -> std::string {
                     auto admin = Admin::connect(socket);
                     auto drained = admin->drain();
                     if (drained.ok()) return "drained without the admin group";
                     if (drained.error().message().find("group 'users'") == std::string::npos)
                       return drained.error().message();
                     return "";
                   }),
            "");
  EXPECT_FALSE(daemon_status(socket).draining);
  // With it as a supplementary group (SO_PEERGROUPS): allowed.
  EXPECT_EQ(run_as({kNobody, kNogroup, {admin_gid}},
                   [&]() -> std::string {
                     auto admin = Admin::connect(socket);
                     auto status = admin->status();
                     if (!status.ok() || !status->admin) return "an admin_group member is not an admin";
                     auto drained = admin->drain();
                     return drained.ok() ? "" : "drain: " + drained.error().message();
                   }),
            "");
  EXPECT_TRUE(daemon_status(socket).draining);
}

TEST(AuthorizationTest, NonAdminSeesItsOwnStreamsAndOnlyCountsOfOthers) {
  if (!running_as_root()) GTEST_SKIP() << kNeedsRoot;
  auto daemon = start_daemon("file_system");
  open_socket_to_everyone(daemon.socket_path());
  const std::string socket = daemon.socket_path();
  // Root's stream: a named segment whose name, pid and uid a non-admin must not see.
  auto root_client = Client::connect(socket);
  auto root_stream = root_client->open_stream(fmnist_options());
  ASSERT_TRUE(root_stream.ok()) << root_stream.error().message();
  const std::string root_segment = root_stream->info().segment_name;
  const uint64_t root_bytes = root_stream->info().segment_bytes;
  ASSERT_FALSE(root_segment.empty());

  const std::string verdict = run_as({}, [&]() -> std::string {
    auto client = Client::connect(socket);
    auto o = fmnist_options();
    o.strategy = SharingStrategy::kFileDescriptor;  // its own stream (a memfd: no file to open by name)
    auto mine = client->open_stream(o);
    if (!mine.ok()) return "open_stream: " + mine.error().message();
    auto status = Admin::connect(socket)->status();
    if (!status.ok()) return "status: " + status.error().message();
    if (status->streams.size() != 1 || status->segments.size() != 1) {
      return "expected only my stream and segment, got " + std::to_string(status->streams.size()) + " and " +
             std::to_string(status->segments.size());
    }
    if (status->streams[0].stream_id != mine->info().id || status->streams[0].client_pid != ::getpid()) {
      return "the stream shown is not mine";
    }
    if (status->segments[0].owner_uid != kNobody) return "the segment shown is not mine";
    if (status->streams_of_others != 1) return "streams_of_others = " + std::to_string(status->streams_of_others);
    if (status->segment_bytes_of_others != root_bytes) return "segment_bytes_of_others is not root's segment's size";
    auto json = to_json(*status);
    if (!json.ok()) return json.error().message();
    const std::string root_pid = std::to_string(::getppid());  // root's client is the test process
    for (const std::string& secret :
         {root_segment, std::string("\"owner_uid\":0"), "\"client_pid\":" + root_pid, "\"owner_pid\":" + root_pid}) {
      if (json->find(secret) != std::string::npos) return "the status shows another user's " + secret + ": " + *json;
    }
    return "";
  });
  EXPECT_EQ(verdict, "");

  // batchctl says how many streams it does not show.
  const std::string batchctl_out = run_as({}, [&]() -> std::string {
    std::string out;
    FILE* p = ::popen((std::string(BATCHD_BIN_DIR "/batchctl --socket ") + socket + " status 2>&1").c_str(), "r");
    char buf[4096];
    while (p != nullptr && std::fgets(buf, sizeof(buf), p)) out += buf;
    if (p != nullptr) ::pclose(p);
    return out;
  });
  EXPECT_NE(batchctl_out.find("1 stream of other users"), std::string::npos) << batchctl_out;
  EXPECT_EQ(batchctl_out.find(root_segment), std::string::npos) << batchctl_out;

  // An admin sees everything, and nothing is counted as hidden.
  const DaemonStatus all = daemon_status(socket);
  EXPECT_EQ(all.streams.size(), 1u) << "the child's stream closed with its connection";
  EXPECT_EQ(all.streams_of_others, 0u);
  ASSERT_EQ(all.segments.size(), 1u);
  EXPECT_EQ(all.segments[0].name, root_segment);
}

}  // namespace
}  // namespace batchd::testing
