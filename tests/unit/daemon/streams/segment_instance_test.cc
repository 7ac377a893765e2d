// SegmentInstance: a fresh id per claim, a lock file that is locked from the moment it has a name, probed live
// while held and gone once released; unlinked on destruction.
#include "streams/segment_instance.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "batchd/wire/shm_scan.h"

namespace batchd::daemon {
namespace {

TEST(SegmentInstanceTest, ClaimsAFreshLockedInstanceAndReleasesItOnDestruction) {
  auto a = SegmentInstance::claim("/dev/shm", "/tmp/test.sock");
  auto b = SegmentInstance::claim("/dev/shm", "/tmp/test.sock");
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(wire::is_instance_id(a->id())) << a->id();
  EXPECT_NE(a->id(), b->id()) << "every run gets its own id";
  const std::string path = "/dev/shm/batchd." + a->id() + ".lock";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u) << "anyone may probe it";
  std::string text;
  std::getline(std::ifstream(path), text);
  EXPECT_NE(text.find("serving /tmp/test.sock"), std::string::npos) << text;
  EXPECT_EQ(wire::probe_instance("/dev/shm", a->id()), wire::InstanceState::kLive);
  const std::string id = a->id();
  { SegmentInstance moved = std::move(a).value(); }
  EXPECT_FALSE(std::filesystem::exists(path)) << "a clean exit removes the lock file";
  EXPECT_EQ(wire::probe_instance("/dev/shm", id), wire::InstanceState::kGone);
  EXPECT_EQ(wire::probe_instance("/dev/shm", b->id()), wire::InstanceState::kLive);
}

TEST(SegmentInstanceTest, AnUnwritableDirectoryIsAClearError) {
  auto refused = SegmentInstance::claim("/nonexistent-shm-dir");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("/nonexistent-shm-dir"), std::string::npos) << refused.error().message();
  EXPECT_NE(refused.error().message().find("batchd needs a writable"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon
