// flock_holder: the holder of a file's flock as /proc/locks shows it (the real one, then a written one for the lines
// that must not count: a waiter, a POSIX lock on the same file).
#include "batchd/wire/lock_holder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace batchd::wire {
namespace {

namespace fs = std::filesystem;

class LockHolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "lock-holder-" + std::to_string(::getpid());
    fs::create_directories(dir_);
    path_ = dir_ + "/batchd.0123456789abcdef.lock";
    std::ofstream(path_) << "x";
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    fs::remove_all(dir_);
  }
  // "MAJ:MIN:INODE" of path_ as /proc/locks prints it.
  std::string where() const {
    struct stat st {};
    ::stat(path_.c_str(), &st);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev),
                  static_cast<unsigned long long>(st.st_ino));
    return buf;
  }

  std::string dir_, path_;
  int fd_ = -1;
};

TEST_F(LockHolderTest, NamesTheProcessHoldingTheFlock) {
  EXPECT_FALSE(flock_holder(path_)) << "nobody holds it yet";
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(::flock(fd_, LOCK_EX | LOCK_NB), 0);
  auto holder = flock_holder(path_);
  ASSERT_TRUE(holder) << "/proc/locks lists this process's lock";
  EXPECT_EQ(holder->pid, ::getpid());
  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  EXPECT_EQ(holder->name, comm);
  EXPECT_EQ(describe(*holder), "pid " + std::to_string(::getpid()) + " (" + comm + ")");
  EXPECT_FALSE(flock_holder(dir_ + "/missing"));
}

TEST_F(LockHolderTest, AWaiterOrAPosixLockIsNotTheFlockHolder) {
  const std::string locks = dir_ + "/locks";
  std::ofstream(locks) << "1: POSIX  ADVISORY  WRITE 111 " << where() << " 0 EOF\n"
                       << "2: FLOCK  ADVISORY  WRITE 222 00:00:1 0 EOF\n"
                       << "2: -> FLOCK  ADVISORY  WRITE 333 " << where() << " 0 EOF\n";
  EXPECT_FALSE(flock_holder(path_, locks));
  std::ofstream(locks, std::ios::app) << "3: FLOCK  ADVISORY  WRITE 0 " << where() << " 0 EOF\n";
  auto holder = flock_holder(path_, locks);
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->pid, 0) << "a holder in another pid namespace shows as pid 0";
  EXPECT_EQ(describe(*holder), "a process in another pid namespace");
}

}  // namespace
}  // namespace batchd::wire
