// Every wire dtype has its element size and its torch-style name, on the wire (convert.h) and in the client's
// public DType (client.h), value for value.
#include <gtest/gtest.h>

#include <string>

#include "batchd/client.h"
#include "batchd/wire/convert.h"

namespace batchd {
namespace {

struct Expected {
  wire::DType wire;
  DType client;
  size_t size;
  const char* name;
};

constexpr Expected kAll[] = {
    {wire::UINT8, DType::kUInt8, 1, "uint8"},         {wire::FLOAT32, DType::kFloat32, 4, "float32"},
    {wire::INT64, DType::kInt64, 8, "int64"},         {wire::FLOAT16, DType::kFloat16, 2, "float16"},
    {wire::BFLOAT16, DType::kBFloat16, 2, "bfloat16"}, {wire::FLOAT64, DType::kFloat64, 8, "float64"},
    {wire::INT32, DType::kInt32, 4, "int32"},         {wire::BOOL, DType::kBool, 1, "bool"},
    {wire::INT16, DType::kInt16, 2, "int16"},         {wire::INT8, DType::kInt8, 1, "int8"},
};

TEST(DTypeTest, EachWireDTypeHasItsSizeAndName) {
  for (const auto& e : kAll) {
    EXPECT_EQ(wire::dtype_size(e.wire), e.size) << e.name;
    EXPECT_STREQ(wire::dtype_name(e.wire), e.name);
  }
}

TEST(DTypeTest, EachClientDTypeHasItsSizeAndName) {
  for (const auto& e : kAll) {
    EXPECT_EQ(dtype_size(e.client), e.size) << e.name;
    EXPECT_STREQ(dtype_name(e.client), e.name);
  }
}

TEST(DTypeTest, TheTableCoversEveryValueOfTheEnum) {
  // A value added to proto DType without a size and a name fails here.
  const auto* descriptor = wire::DType_descriptor();
  ASSERT_EQ(static_cast<size_t>(descriptor->value_count()), std::size(kAll) + 1);  // + DTYPE_UNSPECIFIED
  for (int i = 0; i < descriptor->value_count(); ++i) {
    const auto dtype = static_cast<wire::DType>(descriptor->value(i)->number());
    if (dtype == wire::DTYPE_UNSPECIFIED) continue;
    EXPECT_NE(wire::dtype_size(dtype), 0u) << descriptor->value(i)->name();
    EXPECT_NE(std::string(wire::dtype_name(dtype)), "") << descriptor->value(i)->name();
  }
}

TEST(DTypeTest, UnspecifiedAndUnknownHaveNoSizeOrName) {
  EXPECT_EQ(wire::dtype_size(wire::DTYPE_UNSPECIFIED), 0u);
  EXPECT_EQ(wire::dtype_size(static_cast<wire::DType>(42)), 0u);
  EXPECT_STREQ(wire::dtype_name(static_cast<wire::DType>(42)), "");
}

}  // namespace
}  // namespace batchd
