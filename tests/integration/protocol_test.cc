// Malformed input on the control socket closes only the offending connection; the daemon keeps serving others.
#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

class ProtocolTest : public SharedDaemonTest {
 protected:
  // A client already mid-stream before the bad input arrives, and checked after it.
  void SetUp() override {
    auto c = Client::connect(daemon().socket_path());
    ASSERT_TRUE(c.ok());
    bystander_.emplace(std::move(c).value());
    auto s = bystander_->open_stream(fmnist_options());
    ASSERT_TRUE(s.ok());
    stream_.emplace(std::move(s).value());
    auto b = stream_->next();
    ASSERT_TRUE(b.ok() && *b);
  }
  void TearDown() override {
    // The bystander keeps reading, and a new client can still open a stream.
    for (int i = 0; i < 5; ++i) {
      auto b = stream_->next();
      ASSERT_TRUE(b.ok() && *b) << (b.ok() ? "end" : b.error().message());
    }
    auto c = Client::connect(daemon().socket_path());
    ASSERT_TRUE(c.ok());
    auto s = c->open_stream(fmnist_options());
    ASSERT_TRUE(s.ok()) << s.error().message();
    auto b = s->next();
    EXPECT_TRUE(b.ok() && *b);
  }

  static std::string header(uint32_t n) {
    return {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
  }

  std::optional<Client> bystander_;
  std::optional<Stream> stream_;
};

TEST_F(ProtocolTest, OversizedFrameGetsAnErrorAndTheConnectionIsClosed) {
  RawConnection raw(daemon().socket_path());
  raw.send_bytes(header(0xfffffff0u));
  const auto replies = raw.read_until_eof();
  ASSERT_EQ(replies.size(), 1u);
  ASSERT_TRUE(replies[0].has_error());
  EXPECT_EQ(replies[0].error().code(), wire::PROTOCOL);
  EXPECT_NE(replies[0].error().message().find("over the limit"), std::string::npos) << replies[0].error().message();
}

TEST_F(ProtocolTest, GarbagePayloadIsAMalformedRequest) {
  RawConnection raw(daemon().socket_path());
  raw.send_bytes(header(6) + std::string("\xff\xff\xff\xff\xff\xff", 6));
  const auto replies = raw.read_until_eof();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_NE(replies[0].error().message().find("malformed request"), std::string::npos);
}

TEST_F(ProtocolTest, RequestWithoutAKnownTypeIsRefusedByItsId) {
  RawConnection raw(daemon().socket_path());
  wire::Request empty;
  empty.set_request_id(77);
  raw.send_request(empty);
  const auto replies = raw.read_until_eof();
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].request_id(), 77u);
  EXPECT_NE(replies[0].error().message().find("unknown or empty body"), std::string::npos);
}

TEST_F(ProtocolTest, TruncatedFrameThenHangUpIsHandled) {
  RawConnection raw(daemon().socket_path());
  raw.send_bytes(header(100) + std::string(10, 'x'));
  raw.shutdown_write();
  EXPECT_TRUE(raw.read_until_eof().empty());
}

TEST_F(ProtocolTest, ReleaseOfABatchNeverLeasedClosesTheConnection) {
  RawConnection raw(daemon().socket_path());
  raw.send_request(fmnist_open_request(10));
  auto opened = raw.read_reply();
  ASSERT_TRUE(opened && opened->has_stream_opened());
  wire::Request release;
  release.mutable_release()->set_stream_id(opened->stream_opened().stream_id());
  release.mutable_release()->set_sequence(999999);
  raw.send_request(release);
  bool saw_error = false;
  for (const auto& r : raw.read_until_eof()) {
    if (r.has_error()) saw_error = r.error().message().find("999999") != std::string::npos;
  }
  EXPECT_TRUE(saw_error);
}

TEST_F(ProtocolTest, ManyBadConnectionsInARowDoNotDisturbTheDaemon) {
  for (int i = 0; i < 50; ++i) {
    RawConnection raw(daemon().socket_path());
    raw.send_bytes(i % 2 ? header(0xffffffffu) : header(3) + "abc");
    raw.read_until_eof();
  }
}

}  // namespace
}  // namespace batchd::testing
