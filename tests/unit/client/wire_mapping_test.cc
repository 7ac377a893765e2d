// The client's mapping of wire dtypes (client/src/wire_mapping.h): every DType both ways, and a StreamOpened whose
// tensor has a dtype this client does not know is refused before its bytes are read as anything.
#include "wire_mapping.h"

#include <gtest/gtest.h>

#include "batchd/wire/convert.h"

namespace batchd::detail {
namespace {

TEST(WireMappingTest, EveryDTypeRoundTrips) {
  for (DType d : {DType::kUInt8, DType::kFloat32, DType::kInt64, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                  DType::kInt32, DType::kBool}) {
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

}  // namespace
}  // namespace batchd::detail
