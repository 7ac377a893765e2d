// segment_acl: the one ACL a file_system segment gets, and the refusal where the filesystem has no POSIX ACLs.
#include "streams/segment_acl.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace batchd::daemon {
namespace {

TEST(SegmentAclTest, OneNamedEntryWhoseMaskMatchesAndNothingForGroupOrOthers) {
  auto ro = Acl::for_client(1234, false);
  ASSERT_TRUE(ro.ok()) << ro.error().message();
  EXPECT_EQ(ro->text(), "user::rw-,user:1234:r--,group::---,mask::r--,other::---");
  auto rw = Acl::for_client(1234, true);
  ASSERT_TRUE(rw.ok());
  EXPECT_EQ(rw->text(), "user::rw-,user:1234:rw-,group::---,mask::rw-,other::---");
}

TEST(SegmentAclTest, AFilesystemWithoutAclsIsAClearRefusalNamingBothFixes) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);  // pipefs has no POSIX ACLs: acl_set_fd fails with EOPNOTSUPP, as on such a /dev/shm
  const uid_t other = ::geteuid() + 1;
  const Status refused = grant_client(p[0], other, false, "/dev/shm/batchd.0123456789abcdef.1");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  const std::string& m = refused.error().message();
  EXPECT_NE(m.find("/dev/shm/batchd.0123456789abcdef.1"), std::string::npos) << m;
  EXPECT_NE(m.find("no POSIX ACL support"), std::string::npos) << m;
  EXPECT_NE(m.find("file_descriptor strategy"), std::string::npos) << m;
  EXPECT_NE(m.find("mount /dev/shm with POSIX ACL support"), std::string::npos) << m;
  EXPECT_TRUE(grant_client(p[0], ::geteuid(), true, "x").ok()) << "the daemon's own uid needs no ACL";
  ::close(p[0]);
  ::close(p[1]);
}

}  // namespace
}  // namespace batchd::daemon
