// ParentWatch (--exit-with-parent): refuses a pid that is not the parent, fires when the real parent dies by SIGKILL
// (a three-process test: this test forks the parent, which forks the watcher), and leaves no work on the event
// loop once cancelled (the drain must be able to end).
#include "server/parent_watch.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace batchd::daemon {
namespace {

// One byte from `fd` within `timeout_ms`, or -1.
int read_byte(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return -1;
  char c = 0;
  return ::read(fd, &c, 1) == 1 ? c : -1;
}

TEST(ParentWatchTest, APidThatIsNotTheParentIsRefusedNamingBoth) {
  auto sut = ParentWatch::open(::getpid());  // alive, but not our parent
  ASSERT_FALSE(sut.ok());
  EXPECT_EQ(sut.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(sut.error().message().find("is not this daemon's parent (the parent is pid " +
                                       std::to_string(::getppid())),
            std::string::npos)
      << sut.error().message();
  EXPECT_EQ(ParentWatch::open(1).error().code(), ErrorCode::kInvalidArgument);
}

TEST(ParentWatchTest, FiresWhenTheParentIsKilled) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {  // the "trainer": starts the watcher, then waits to be killed
    const pid_t watcher = ::fork();
    if (watcher == 0) {  // the "daemon"
      ::alarm(20);       // never outlive the test, whatever happens
      auto sut = ParentWatch::open(::getppid());
      if (!sut.ok()) ::_exit(2);
      boost::asio::io_context io;
      sut->watch(io, [&] {
        (void)!::write(pipefd[1], "x", 1);
        io.stop();
      });
      (void)!::write(pipefd[1], "a", 1);  // armed
      io.run();
      ::_exit(0);
    }
    for (;;) ::pause();
  }
  ::close(pipefd[1]);
  ASSERT_EQ(read_byte(pipefd[0], 10000), 'a') << "the watcher did not arm its watch";
  EXPECT_EQ(read_byte(pipefd[0], 300), -1) << "fired while its parent lives";
  ASSERT_EQ(::kill(parent, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(parent, &status, 0), parent);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(read_byte(pipefd[0], 5000), 'x') << "the watch did not fire after its parent's SIGKILL";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));  // a pidfd fires at once
  ::close(pipefd[0]);
}

TEST(ParentWatchTest, ACancelledWatchLeavesNoWorkAndDoesNotFire) {
  auto sut = ParentWatch::open(::getppid());  // this test's own parent (ctest, a shell): alive throughout
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  EXPECT_EQ(sut->pid(), ::getppid());
  boost::asio::io_context io;
  bool fired = false;
  sut->watch(io, [&] { fired = true; });
  EXPECT_EQ(io.poll(), 0u);  // armed and pending: nothing to run yet
  EXPECT_FALSE(io.stopped());
  sut->cancel();
  io.run();  // returns: the cancelled wait was the only work
  EXPECT_FALSE(fired);
}

}  // namespace
}  // namespace batchd::daemon
