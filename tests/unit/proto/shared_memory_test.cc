#include "batchd/wire/shared_memory.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "batchd/wire/segment_layout.h"

namespace batchd::wire {
namespace {

std::string unique_name() { return "batchd-test." + std::to_string(::getpid()) + "." + std::to_string(rand()); }

TEST(SharedMemoryTest, NamedSegmentExistsWhileOwnedAndIsUnlinkedOnDestruction) {
  const std::string name = unique_name();
  const std::string path = "/dev/shm/" + name;
  {
    auto sut = SharedMemory::create_named(name, 1 << 20, 0600);
    ASSERT_TRUE(sut.ok()) << sut.error().message();
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_GE(st.st_blocks * 512, 1 << 20) << "posix_fallocate should have reserved every page";

    SharedMemory moved = std::move(sut).value();  // moving must not unlink
    EXPECT_TRUE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SharedMemoryTest, CreateNamedRefusesAnExistingName) {
  const std::string name = unique_name();
  auto first = SharedMemory::create_named(name, 4096, 0600);
  ASSERT_TRUE(first.ok());
  auto second = SharedMemory::create_named(name, 4096, 0600);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message().find(name), std::string::npos);
}

TEST(SharedMemoryTest, AnonymousSegmentIsSharedThroughItsFdAndHasNoName) {
  auto sut = SharedMemory::create_anonymous("batchd-test", 8192);
  ASSERT_TRUE(sut.ok());
  EXPECT_TRUE(sut->name().empty());
  auto writer = Mapping::map(sut->fd(), 8192, true, true);
  auto reader = Mapping::map(sut->fd(), 8192, false, false);
  ASSERT_TRUE(writer.ok() && reader.ok());
  std::memcpy(writer->data() + 4096, "batch", 5);
  EXPECT_EQ(std::string(reader->data() + 4096, 5), "batch");
}

TEST(SharedMemoryTest, AnonymousSegmentIsMode0600OfItsCreator) {
  // A memfd is born 0777: any holder of a read-only fd could reopen it read-write through /proc/self/fd/N.
  auto sut = SharedMemory::create_anonymous("batchd-test", 8192);
  ASSERT_TRUE(sut.ok());
  struct stat st {};
  ASSERT_EQ(::fstat(sut->fd(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << std::oct << st.st_mode;
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(SharedMemoryTest, OpenNamedOfAMissingSegmentNamesIt) {
  auto sut = SharedMemory::open_named("batchd-test-does-not-exist");
  ASSERT_FALSE(sut.ok());
  EXPECT_NE(sut.error().message().find("/dev/shm/batchd-test-does-not-exist"), std::string::npos);
}

TEST(SegmentLayoutTest, SlotsArePageAlignedAndTensorsAligned) {
  auto layout = compute_layout({784 * 4, 8, 8}, 256, 4);
  ASSERT_TRUE(layout.has_value());
  EXPECT_EQ(layout->slot_offset % kPageBytes, 0u);
  EXPECT_EQ(layout->slot_stride % kPageBytes, 0u);
  ASSERT_EQ(layout->tensor_offsets.size(), 3u);
  EXPECT_GE(layout->tensor_offsets[0], kSlotHeaderBytes);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(layout->tensor_offsets[i] % kTensorAlignment, 0u);
  EXPECT_GE(layout->tensor_offsets[1], layout->tensor_offsets[0] + 784 * 4 * 256);
  EXPECT_GE(layout->slot_stride, layout->tensor_offsets[2] + 8 * 256);
  EXPECT_EQ(layout->segment_bytes, layout->slot_offset + 4 * layout->slot_stride);
}

TEST(SegmentLayoutTest, RejectsSizesThatOverflow) {
  EXPECT_FALSE(compute_layout({uint64_t{1} << 40}, uint64_t{1} << 30, 4).has_value());
  EXPECT_FALSE(compute_layout({1 << 20}, 1 << 20, 0xffffffffu).has_value());
}

}  // namespace
}  // namespace batchd::wire

namespace batchd::wire {
namespace {

TEST(SharedMemoryTest, AnonymousSegmentCannotBeResizedByAnyFdHolder) {
  auto sut = SharedMemory::create_anonymous("batchd-test", 8192);
  ASSERT_TRUE(sut.ok());
  EXPECT_NE(::ftruncate(sut->fd(), 0), 0) << "a shrink would SIGBUS every mapping";
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(sut->fd(), 1 << 20), 0);
}

TEST(SharedMemoryTest, ReadOnlyReopenCanBeMappedButNotWritten) {
  auto sut = SharedMemory::create_anonymous("batchd-test", 8192);
  ASSERT_TRUE(sut.ok());
  auto writer = Mapping::map(sut->fd(), 8192, true, false);
  std::memcpy(writer->data(), "slot", 4);
  auto ro = sut->reopen(/*writable=*/false);
  ASSERT_TRUE(ro.ok()) << ro.error().message();
  auto reader = Mapping::map(ro->get(), 8192, false, true);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(std::string(reader->data(), 4), "slot");
  EXPECT_FALSE(Mapping::map(ro->get(), 8192, true, false).ok()) << "a client must not get a writable mapping";
  EXPECT_LT(::write(ro->get(), "x", 1), 0);
}

}  // namespace
}  // namespace batchd::wire
