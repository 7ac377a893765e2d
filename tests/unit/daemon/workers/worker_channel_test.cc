// WorkerChannel: sending to a worker that does not read never waits (frames queue behind a full socket buffer and
// go out, in order, with the fd on its frame, once the peer reads); a broken channel is reported once, after send()
// returned.
#include "workers/worker_channel.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "batchd.pb.h"
#include "batchd/wire/fd_passing.h"

namespace batchd::daemon {
namespace {

using std::chrono::milliseconds;

class WorkerChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    peer_.reset(sv[1]);
    sut_ = WorkerChannel::create(io_, wire::UniqueFd(sv[0]), 1 << 20,
                                 {[this](const std::string&) { ++frames_in_; },
                                  [this](const std::string& why) {
                                    EXPECT_FALSE(in_send_) << "on_broken ran inside send()";
                                    broken_.push_back(why);
                                  }});
    sut_->start();
  }
  // A command of about `bytes` bytes, numbered by its stream id.
  static wire::WorkerCommand big(uint64_t n, size_t bytes) {
    wire::WorkerCommand c;
    c.mutable_attach()->set_stream_id(n);
    c.mutable_attach()->set_dataset_key(std::string(bytes, 'x'));
    return c;
  }
  Status send(const wire::WorkerCommand& c, int fd = -1) {
    in_send_ = true;
    auto st = sut_->send(c, fd);
    in_send_ = false;
    return st;
  }

  boost::asio::io_context io_;
  wire::UniqueFd peer_;
  std::shared_ptr<WorkerChannel> sut_;
  int frames_in_ = 0;
  std::vector<std::string> broken_;
  bool in_send_ = false;
};

TEST_F(WorkerChannelTest, SendingToAPeerThatDoesNotReadNeverWaitsAndEverythingArrivesInOrderLater) {
  constexpr int kFrames = 48;  // 12 MiB: far more than a socket buffer holds
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(send(big(0, 256 << 10), STDIN_FILENO).ok());
  for (int i = 1; i < kFrames; ++i) ASSERT_TRUE(send(big(i, 256 << 10)).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(1000));
  EXPECT_GT(sut_->queued_bytes(), 8u << 20) << "the rest waits in the queue";

  std::vector<uint64_t> order;
  std::vector<wire::UniqueFd> fds;
  std::thread reader([&] {
    wire::FrameDecoder decoder(1 << 20);
    std::vector<char> buffer(1 << 16);
    std::string payload;
    while (order.size() < kFrames) {
      auto n = wire::recv_some(peer_.get(), buffer.data(), buffer.size(), &fds, 4);
      if (!n.ok() || *n == 0) return;
      decoder.feed(buffer.data(), *n);
      while (decoder.next(&payload).value()) {
        wire::WorkerCommand c;
        c.ParseFromString(payload);
        order.push_back(c.attach().stream_id());
      }
    }
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (sut_->queued_bytes() > 0 && std::chrono::steady_clock::now() < end) io_.run_for(milliseconds(5));
  reader.join();
  EXPECT_EQ(sut_->queued_bytes(), 0u);
  ASSERT_EQ(order.size(), static_cast<size_t>(kFrames));
  for (int i = 0; i < kFrames; ++i) EXPECT_EQ(order[i], static_cast<uint64_t>(i));
  ASSERT_EQ(fds.size(), 1u) << "the fd rides on its frame, once";
  struct stat a {}, b {};
  ASSERT_EQ(::fstat(fds[0].get(), &a), 0);
  ASSERT_EQ(::fstat(STDIN_FILENO, &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_TRUE(broken_.empty());
}

TEST_F(WorkerChannelTest, APeerThatIsGoneIsReportedOnceAfterSendReturns) {
  peer_.reset();
  EXPECT_TRUE(send(big(1, 100)).ok());
  EXPECT_TRUE(send(big(2, 100)).ok());
  io_.run_for(milliseconds(50));
  ASSERT_EQ(broken_.size(), 1u);
  EXPECT_EQ(frames_in_, 0);
}

TEST_F(WorkerChannelTest, NoHandlerRunsAfterClose) {
  ASSERT_EQ(::send(peer_.get(), "\0\0\0\0", 4, 0), 4);  // an empty frame is pending
  sut_->close();
  peer_.reset();
  io_.run_for(milliseconds(50));
  EXPECT_EQ(frames_in_, 0);
  EXPECT_TRUE(broken_.empty());
}

}  // namespace
}  // namespace batchd::daemon
