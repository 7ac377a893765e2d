#include "batchd/wire/framing.h"

#include <gtest/gtest.h>

#include "batchd.pb.h"

namespace batchd::wire {
namespace {

Request sample_request() {
  Request r;
  r.set_request_id(42);
  r.mutable_open_stream()->set_dataset("fashion-mnist");
  r.mutable_open_stream()->set_batch_size(256);
  return r;
}

TEST(FramingTest, RoundTripsOneFrameFedByteByByte) {
  auto frame = encode_frame(sample_request());
  ASSERT_TRUE(frame.ok());
  FrameDecoder sut;
  std::string payload;
  for (size_t i = 0; i + 1 < frame->size(); ++i) {
    sut.feed(frame->data() + i, 1);
    auto more = sut.next(&payload);
    ASSERT_TRUE(more.ok());
    EXPECT_FALSE(*more) << "a frame was produced after only " << i + 1 << " bytes";
  }
  sut.feed(frame->data() + frame->size() - 1, 1);
  auto more = sut.next(&payload);
  ASSERT_TRUE(more.ok());
  ASSERT_TRUE(*more);
  Request parsed;
  ASSERT_TRUE(parse_payload(payload, &parsed, "request").ok());
  EXPECT_EQ(parsed.request_id(), 42u);
  EXPECT_EQ(parsed.open_stream().dataset(), "fashion-mnist");
  EXPECT_EQ(sut.buffered(), 0u);
}

TEST(FramingTest, SplitsSeveralFramesDeliveredInOneRead) {
  std::string bytes;
  for (int i = 1; i <= 3; ++i) {
    Request r = sample_request();
    r.set_request_id(i);
    bytes += *encode_frame(r);
  }
  FrameDecoder sut;
  sut.feed(bytes.data(), bytes.size());
  std::string payload;
  for (uint64_t i = 1; i <= 3; ++i) {
    ASSERT_TRUE(*sut.next(&payload));
    Request r;
    ASSERT_TRUE(parse_payload(payload, &r, "request").ok());
    EXPECT_EQ(r.request_id(), i);
  }
  EXPECT_FALSE(*sut.next(&payload));
}

TEST(FramingTest, RefusesAnOversizedFrameFromItsHeaderAlone) {
  FrameDecoder sut(1024);
  const unsigned char header[4] = {0x01, 0x04, 0x00, 0x00};  // 1025 bytes announced
  sut.feed(reinterpret_cast<const char*>(header), 4);
  std::string payload;
  auto more = sut.next(&payload);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().code(), batchd::ErrorCode::kResourceExhausted);
  EXPECT_NE(more.error().message().find("1025"), std::string::npos) << more.error().message();
}

TEST(FramingTest, EncodeRefusesAMessageOverTheLimit) {
  Request r;
  r.mutable_open_stream()->set_dataset(std::string(5000, 'x'));
  auto frame = encode_frame(r, 4096);
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(frame.error().code(), batchd::ErrorCode::kResourceExhausted);
}

TEST(FramingTest, ParseReportsGarbageAsAProtocolError) {
  Request r;
  auto st = parse_payload(std::string("\xff\xff\xff\xff\xff", 5), &r, "request");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), batchd::ErrorCode::kProtocol);
  EXPECT_NE(st.error().message().find("malformed request"), std::string::npos);
}

TEST(FramingTest, TruncatedFrameStaysBufferedAndIsReported) {
  auto frame = encode_frame(sample_request());
  FrameDecoder sut;
  sut.feed(frame->data(), frame->size() - 3);
  std::string payload;
  EXPECT_FALSE(*sut.next(&payload));
  EXPECT_EQ(sut.buffered(), frame->size() - 3);
}

}  // namespace
}  // namespace batchd::wire

namespace batchd::wire {
namespace {

TEST(FramingTest, PartialFrameCostsWhatWasSentNotWhatWasAnnounced) {
  FrameDecoder sut(1u << 20);
  const uint32_t announced = 1u << 20;
  const std::string header{0, 0, 0x10, 0};  // 1 MiB, little-endian
  sut.feed(header.data(), header.size());
  const std::string chunk(1000, 'x');
  sut.feed(chunk.data(), chunk.size());
  std::string payload;
  ASSERT_FALSE(*sut.next(&payload));
  EXPECT_LT(sut.capacity(), 16u << 10) << "a header announcing " << announced << " bytes allocated them up front";
  // Growth stops at the frame's end: all but one byte of a 64 KiB frame fits in a buffer of that frame's size.
  FrameDecoder big(1u << 20);
  const std::string header64{0, 0, 1, 0};
  big.feed(header64.data(), header64.size());
  const std::string body(4096, 'y');
  for (int i = 0; i < 15; ++i) big.feed(body.data(), body.size());
  big.feed(body.data(), body.size() - 1);
  ASSERT_FALSE(*big.next(&payload));
  EXPECT_LE(big.capacity(), 65536u + 64) << "doubling went past the frame's end";
}

TEST(FramingTest, BufferIsFreedOnceEverythingWasReturned) {
  FrameDecoder sut(1u << 20);
  const std::string frame = std::string{0, 0, 1, 0} + std::string(65536, 'z');
  sut.feed(frame.data(), frame.size());
  EXPECT_GE(sut.capacity(), frame.size());
  std::string payload;
  ASSERT_TRUE(*sut.next(&payload));
  EXPECT_EQ(payload.size(), 65536u);
  EXPECT_LE(sut.capacity(), FrameDecoder::kKeptCapacity) << "an idle decoder keeps no large buffer";
}

}  // namespace
}  // namespace batchd::wire
