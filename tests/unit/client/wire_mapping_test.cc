// The client's mapping of wire dtypes (client/src/core/wire_mapping.h): every DType both ways, and a StreamOpened whose
// tensor has a dtype this client does not know is refused before its bytes are read as anything; the lm options and
// endless streams in OpenStream and StreamInfo.
#include "core/wire_mapping.h"

#include <gtest/gtest.h>

#include "batchd/wire/convert.h"

namespace batchd::detail {
namespace {

TEST(WireMappingTest, EveryDTypeRoundTrips) {
  for (DType d : {DType::kUInt8, DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                  DType::kInt32, DType::kBool, DType::kInt16, DType::kInt8}) {
    ASSERT_TRUE(from_wire(to_wire(d)).has_value()) << dtype_name(d);
    EXPECT_EQ(*from_wire(to_wire(d)), d) << dtype_name(d);
  }
  EXPECT_EQ(to_wire(DType::kBFloat16), wire::BFLOAT16);
  EXPECT_EQ(from_wire(static_cast<wire::DType>(99)), std::nullopt);
}

wire::StreamOpened opened_with(wire::DType dtype) {
  wire::StreamOpened o;
  o.set_stream_id(7);
  o.set_slot_count(2);
  o.set_slot_stride(4096);
  o.set_slot_offset(4096);
  o.set_segment_bytes(3 * 4096);
  o.set_batch_size(4);
  auto* t = o.add_tensors();
  t->set_name("image");
  t->set_dtype(dtype);
  t->set_sample_bytes(16);
  return o;
}

TEST(WireMappingTest, StreamWithKnownDTypesPasses) {
  for (auto dtype : {wire::UINT8, wire::FLOAT16, wire::BFLOAT16, wire::BOOL, wire::INT32, wire::FLOAT64}) {
    EXPECT_TRUE(check_stream_opened(opened_with(dtype), 3 * 4096).ok()) << wire::dtype_name(dtype);
  }
}

TEST(WireMappingTest, StreamWithUnknownDTypeIsRefusedNamingTheTensor) {
  const Status st = check_stream_opened(opened_with(static_cast<wire::DType>(99)), 3 * 4096);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kProtocol);
  EXPECT_NE(st.error().message().find("stream 7: tensor 'image' has dtype 99, which this client does not know"),
            std::string::npos)
      << st.error().message();
}

TEST(WireMappingTest, LmOptionsAndEndlessGoOnTheWireAndComeBackInStreamInfo) {
  StreamOptions o;
  EXPECT_EQ(open_request(o).open_stream().seq_len(), 0u) << "0 = the dataset's seq_len";
  EXPECT_EQ(open_request(o).open_stream().sampling(), wire::TILED_WINDOWS);
  EXPECT_FALSE(open_request(o).open_stream().endless());
  o.lm.seq_len = 1024;
  o.lm.sampling = LmSampling::kRandomWindows;
  o.endless = true;
  o.num_epochs = 3;
  const wire::OpenStream open = open_request(o).open_stream();
  EXPECT_EQ(open.seq_len(), 1024u);
  EXPECT_EQ(open.sampling(), wire::RANDOM_WINDOWS);
  EXPECT_TRUE(open.endless());
  EXPECT_EQ(open.num_epochs(), 0u) << "num_epochs means nothing to an endless stream";
  wire::StreamOpened opened = opened_with(wire::INT64);
  opened.set_batches_per_epoch(10);
  opened.set_num_epochs(0);
  EXPECT_TRUE(stream_info(opened).endless);
  EXPECT_EQ(stream_info(opened).total_batches, wire::kEndlessBatches);
  opened.set_num_epochs(2);
  EXPECT_FALSE(stream_info(opened).endless);
  EXPECT_EQ(stream_info(opened).total_batches, 20u);
  // A Loader's 2^30 epochs of 2^34 batches (len 2^38, batch 16): 2^64, which wrapped to 0 and ended the stream
  // before its first batch (issue 43, 2). It saturates as an endless stream's count does.
  opened.set_batches_per_epoch(uint64_t{1} << 34);
  opened.set_num_epochs(1u << 30);
  EXPECT_EQ(stream_info(opened).total_batches, wire::kEndlessBatches);
  opened.set_batches_per_epoch((uint64_t{1} << 32) + 1);
  opened.set_start_batch(5);
  EXPECT_EQ(stream_info(opened).total_batches, wire::kEndlessBatches);
}

}  // namespace
}  // namespace batchd::detail
