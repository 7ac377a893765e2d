// AdminPolicy: root, the daemon's uid and admin_group members (primary or supplementary) are admins; the refusal
// says who may and how to become one; drain and shutdown are the admin requests.
#include "server/authorization.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace batchd::daemon {
namespace {

PeerCredentials peer(uid_t uid, gid_t gid, std::vector<gid_t> groups = {}) {
  PeerCredentials p;
  p.pid = 4242;
  p.uid = uid;
  p.gid = gid;
  p.groups = std::move(groups);
  return p;
}

// A uid that is neither root nor this process's.
uid_t stranger() { return ::geteuid() == 65534 ? 65533 : 65534; }

TEST(AdminPolicyTest, RootAndTheDaemonsUidAreAdminsWithoutAnAdminGroup) {
  auto sut = AdminPolicy::create("");
  ASSERT_TRUE(sut.ok());
  EXPECT_TRUE(sut->is_admin(peer(0, 0)));
  EXPECT_TRUE(sut->is_admin(peer(::geteuid(), 12345)));
  EXPECT_FALSE(sut->is_admin(peer(stranger(), 65534, {0, 100})));
  const Error e = sut->refusal("shutdown", peer(stranger(), 65534));
  EXPECT_EQ(e.code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(e.message().find("shutdown is an admin request"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("pid 4242 uid " + std::to_string(stranger())), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("set daemon.admin_group"), std::string::npos) << e.message();
}

TEST(AdminPolicyTest, AdminGroupMembersByPrimaryOrSupplementaryGroupAreAdmins) {
  const group* users = ::getgrnam("users");
  ASSERT_NE(users, nullptr);
  auto sut = AdminPolicy::create("users");
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_TRUE(sut->is_admin(peer(stranger(), users->gr_gid)));
  EXPECT_TRUE(sut->is_admin(peer(stranger(), 65534, {27, users->gr_gid})));
  EXPECT_FALSE(sut->is_admin(peer(stranger(), 65534, {27})));
  const Error e = sut->refusal("drain", peer(stranger(), 65534));
  EXPECT_NE(e.message().find("members of group 'users' (daemon.admin_group)"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("usermod -aG users"), std::string::npos) << e.message();
}

TEST(AdminPolicyTest, UnknownAdminGroupIsRefusedNamingTheKey) {
  auto sut = AdminPolicy::create("no-such-group-batchd");
  ASSERT_FALSE(sut.ok());
  EXPECT_NE(sut.error().message().find("daemon.admin_group 'no-such-group-batchd'"), std::string::npos);
}

TEST(AdminPolicyTest, DrainAndShutdownAreTheAdminRequests) {
  EXPECT_TRUE(requires_admin(wire::Request::kDrain));
  EXPECT_TRUE(requires_admin(wire::Request::kShutdown));
  for (auto body : {wire::Request::kOpenStream, wire::Request::kCloseStream, wire::Request::kRelease,
                    wire::Request::kStatus, wire::Request::kHealth}) {
    EXPECT_FALSE(requires_admin(body)) << request_name(body);
  }
  EXPECT_EQ(request_name(wire::Request::kShutdown), "shutdown");
  EXPECT_EQ(request_name(wire::Request::kHealth), "health");
}

}  // namespace
}  // namespace batchd::daemon
