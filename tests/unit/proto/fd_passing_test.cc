#include "batchd/wire/fd_passing.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

namespace batchd::wire {
namespace {

int open_fd_count() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (::readdir(d) != nullptr) ++n;
  ::closedir(d);
  return n;
}

struct SocketPair {
  UniqueFd a, b;
  SocketPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a.reset(sv[0]);
    b.reset(sv[1]);
  }
};

TEST(FdPassingTest, PassesAnFdThatSharesTheSameMemory) {
  SocketPair sp;
  UniqueFd memfd(::memfd_create("fd-passing-test", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(memfd.get(), 4096), 0);
  ASSERT_EQ(::pwrite(memfd.get(), "hello", 5, 0), 5);
  ASSERT_TRUE(send_all(sp.a.get(), "frame", 5, memfd.get()).ok());

  char buf[16];
  std::vector<UniqueFd> fds;
  auto n = recv_some(sp.b.get(), buf, sizeof(buf), &fds, 1);
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(std::string(buf, *n), "frame");
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_NE(fds[0].get(), memfd.get());
  char got[5];
  ASSERT_EQ(::pread(fds[0].get(), got, 5, 0), 5);
  EXPECT_EQ(std::string(got, 5), "hello");
}

TEST(FdPassingTest, ClosesSurplusFdsAndReportsThem) {
  SocketPair sp;
  const int before = open_fd_count();
  // Two messages' worth of fds in one read: the receiver accepts at most one.
  UniqueFd f1(::memfd_create("a", MFD_CLOEXEC)), f2(::memfd_create("b", MFD_CLOEXEC));
  ASSERT_TRUE(send_all(sp.a.get(), "x", 1, f1.get()).ok());
  ASSERT_TRUE(send_all(sp.a.get(), "y", 1, f2.get()).ok());
  f1.reset();
  f2.reset();
  char buf[16];
  std::vector<UniqueFd> fds;
  Status seen_error;
  for (int i = 0; i < 2; ++i) {
    auto n = recv_some(sp.b.get(), buf, sizeof(buf), &fds, 1);
    if (!n.ok()) seen_error = n.error();
  }
  ASSERT_FALSE(seen_error.ok());
  EXPECT_EQ(seen_error.error().code(), batchd::ErrorCode::kProtocol);
  EXPECT_EQ(fds.size(), 1u);
  fds.clear();
  EXPECT_EQ(open_fd_count(), before) << "a surplus fd leaked";
}

TEST(FdPassingTest, ReportsEofAsZeroAndWouldBlockOnAnEmptyNonBlockingSocket) {
  SocketPair sp;
  ASSERT_EQ(::fcntl(sp.b.get(), F_SETFL, O_NONBLOCK), 0);
  char buf[4];
  auto n = recv_some(sp.b.get(), buf, sizeof(buf), nullptr, 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, kWouldBlock);
  sp.a.reset();
  n = recv_some(sp.b.get(), buf, sizeof(buf), nullptr, 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
}

TEST(FdPassingTest, SendToAClosedPeerIsAnErrorNotSigpipe) {
  SocketPair sp;
  sp.b.reset();
  auto st = send_all(sp.a.get(), "x", 1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), batchd::ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace batchd::wire
