// SegmentPool: admission against the budget, creation with a header, names that carry the instance id, the
// file_system segment's owner, mode and ACL, stamping, and release on destruction.
#include "streams/segment_pool.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "batchd/wire/segment_layout.h"
#include "streams/segment_acl.h"

namespace batchd::daemon {
namespace {

StreamPlan small_plan(wire::SharingStrategy strategy, uint64_t bytes = 64 * 1024) {
  wire::StreamOpened opened;
  opened.set_strategy(strategy);
  opened.set_segment_bytes(bytes);
  opened.set_slot_count(2);
  opened.set_slot_offset(wire::kPageBytes);
  opened.set_slot_stride(wire::kPageBytes);
  return StreamPlan{opened, wire::WorkerAttach{}, std::move(Sampler::make({10, 2}).value()), wire::ON_ERROR_FAIL,
                    false, false};
}

SegmentPool make_pool(uint64_t max_shm_bytes) {
  auto instance = SegmentInstance::claim();
  EXPECT_TRUE(instance.ok()) << instance.error().message();
  return SegmentPool(std::move(instance).value(), max_shm_bytes);
}

std::string acl_of(const Segment& segment) {
  auto acl = Acl::of(segment.fd());
  EXPECT_TRUE(acl.ok()) << acl.error().message();
  return acl.ok() ? acl->text() : "";
}

wire::SegmentHeader header_of(int fd) {
  auto page = wire::Mapping::map(fd, wire::kPageBytes, false, false);
  EXPECT_TRUE(page.ok());
  wire::SegmentHeader h{};
  std::memcpy(&h, page->data(), sizeof(h));
  return h;
}

TEST(SegmentPoolTest, CreatesStampsAndWritesTheHeader) {
  SegmentPool sut = make_pool(1 << 20);
  auto plan = small_plan(wire::FILE_DESCRIPTOR);
  auto a = sut.create(&plan, ::geteuid());
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(plan.opened.stream_id(), a->stream_id());
  EXPECT_EQ(plan.attach.stream_id(), a->stream_id());
  EXPECT_TRUE(plan.opened.fd_attached());
  EXPECT_EQ(plan.opened.segment_name(), "");
  EXPECT_EQ(a->display_name(), "memfd:batchd." + sut.instance_id() + "." + std::to_string(a->stream_id()))
      << "memfd names carry the instance id too";
  const auto h = header_of(a->fd());
  EXPECT_EQ(h.magic, wire::kSegmentMagic);
  EXPECT_EQ(h.version, wire::kLayoutVersion);
  EXPECT_EQ(h.stream_id, a->stream_id());
  EXPECT_EQ(h.segment_bytes, 64u * 1024);
  EXPECT_EQ(h.slot_count, 2u);
  EXPECT_EQ(h.daemon_pid, ::getpid());
  auto plan2 = small_plan(wire::FILE_DESCRIPTOR);
  auto b = sut.create(&plan2, ::geteuid());
  ASSERT_TRUE(b.ok());
  EXPECT_NE(a->stream_id(), b->stream_id()) << "every segment gets its own stream id";
}

TEST(SegmentPoolTest, NamedSegmentExistsExactlyAsLongAsItsOwner) {
  SegmentPool sut = make_pool(1 << 20);
  auto plan = small_plan(wire::FILE_SYSTEM);
  std::string path;
  {
    auto segment = sut.create(&plan, ::geteuid());
    ASSERT_TRUE(segment.ok()) << segment.error().message();
    EXPECT_FALSE(plan.opened.fd_attached());
    path = "/dev/shm/" + plan.opened.segment_name();
    EXPECT_EQ(plan.opened.segment_name(), "batchd." + sut.instance_id() + "." + std::to_string(segment->stream_id()));
    EXPECT_EQ(segment->display_name(), path);
    EXPECT_TRUE(std::filesystem::exists(path));
    Segment moved = std::move(segment).value();  // a move transfers ownership, unlinks nothing
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << "unlinked with its Segment";
}

TEST(SegmentPoolTest, BudgetIsAdmittedBeforeCreationAndReturnedOnDestruction) {
  SegmentPool sut = make_pool(100 * 1024);
  auto p1 = small_plan(wire::FILE_DESCRIPTOR);
  auto first = sut.create(&p1, ::geteuid());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(sut.bytes_in_use(), 64u * 1024);
  auto p2 = small_plan(wire::FILE_DESCRIPTOR);
  auto refused = sut.create(&p2, ::geteuid());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().message().find("limits.max_shm_bytes"), std::string::npos) << refused.error().message();
  EXPECT_EQ(p2.opened.stream_id(), 0u) << "a refused plan is not stamped";
  { Segment gone = std::move(first).value(); }
  EXPECT_EQ(sut.bytes_in_use(), 0u);
  EXPECT_TRUE(sut.create(&p2, ::geteuid()).ok()) << "the budget came back";
}

TEST(SegmentPoolTest, ClientFdIsReadOnlyUnlessWritable) {
  SegmentPool sut = make_pool(1 << 20);
  auto plan = small_plan(wire::FILE_DESCRIPTOR);
  auto segment = sut.create(&plan, ::geteuid());
  ASSERT_TRUE(segment.ok());
  auto ro = segment->client_fd(false);
  ASSERT_TRUE(ro.ok());
  EXPECT_EQ(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro->get(), 0), MAP_FAILED);
  auto rw = segment->client_fd(true);
  ASSERT_TRUE(rw.ok());
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw->get(), 0);
  ASSERT_NE(p, MAP_FAILED);
  ::munmap(p, 4096);
}

TEST(SegmentPoolTest, NamedSegmentIsTheDaemonsMode0600WithOneAclEntryForItsClient) {
  SegmentPool sut = make_pool(1 << 20);
  const uid_t client = ::geteuid() == 65534 ? 65533 : 65534;  // any uid but the daemon's
  for (const bool writable : {false, true}) {
    auto plan = small_plan(wire::FILE_SYSTEM);
    plan.writable = writable;
    auto segment = sut.create(&plan, client);
    ASSERT_TRUE(segment.ok()) << segment.error().message();
    const std::string path = "/dev/shm/" + plan.opened.segment_name();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid()) << "owned by the daemon, never chowned to the client";
    const char* perm = writable ? "rw-" : "r--";
    EXPECT_EQ(acl_of(*segment), "user::rw-,user:" + std::to_string(client) + ":" + perm + ",group::---,mask::" + perm +
                                ",other::---");
    EXPECT_EQ(st.st_mode & 0707, 0600u) << "owner rw, others nothing (the group bits show the ACL mask)";
  }
}

TEST(SegmentPoolTest, NamedSegmentOfTheDaemonsOwnUidHasNoAcl) {
  SegmentPool sut = make_pool(1 << 20);
  auto plan = small_plan(wire::FILE_SYSTEM);
  auto segment = sut.create(&plan, ::geteuid());
  ASSERT_TRUE(segment.ok()) << segment.error().message();
  const std::string path = "/dev/shm/" + plan.opened.segment_name();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(acl_of(*segment), "user::rw-,group::---,other::---") << "the mode alone";
}

}  // namespace
}  // namespace batchd::daemon
