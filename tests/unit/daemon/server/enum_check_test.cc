// check_enums: every enum field of a request, nested ones included, must hold a declared value.
#include "server/enum_check.h"

#include <gtest/gtest.h>

#include "batchd.pb.h"

namespace batchd::daemon {
namespace {

TEST(EnumCheckTest, DeclaredValuesPass) {
  wire::Request r;
  r.mutable_open_stream()->set_strategy(wire::FILE_SYSTEM);
  r.mutable_open_stream()->set_on_error(wire::ON_ERROR_SKIP);
  EXPECT_TRUE(check_enums(r).ok());
  EXPECT_TRUE(check_enums(wire::Request()).ok());
}

TEST(EnumCheckTest, UndeclaredValueIsNamedByPathValueAndValidValues) {
  wire::Request r;
  r.mutable_open_stream()->set_strategy(static_cast<wire::SharingStrategy>(7));
  const Status st = check_enums(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.error().message(),
            "open_stream.strategy = 7 is not a value of enum SharingStrategy (valid: 0 STRATEGY_DEFAULT, 1 "
            "FILE_DESCRIPTOR, 2 FILE_SYSTEM); is the client newer than the daemon?");
  wire::Request neg;
  neg.mutable_open_stream()->set_on_error(static_cast<wire::OnError>(-1));
  EXPECT_NE(check_enums(neg).error().message().find("open_stream.on_error = -1 is not a value of enum OnError"),
            std::string::npos);
}

TEST(EnumCheckTest, RepeatedAndNestedFieldsAreChecked) {
  wire::StreamOpened opened;  // not a request, but the walk is generic: repeated messages with enum fields
  opened.add_tensors()->set_dtype(wire::UINT8);
  opened.add_tensors()->set_dtype(static_cast<wire::DType>(42));
  const Status st = check_enums(opened);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("tensors[1].dtype = 42 is not a value of enum DType"), std::string::npos)
      << st.error().message();
}

TEST(EnumCheckTest, EveryDTypeUpToInt8IsDeclaredAndTheNextIsNot) {
  wire::StreamOpened opened;
  for (auto dtype : {wire::UINT8, wire::FLOAT32, wire::INT64, wire::FLOAT16, wire::BFLOAT16, wire::FLOAT64,
                     wire::INT32, wire::BOOL, wire::INT16, wire::INT8}) {
    opened.add_tensors()->set_dtype(dtype);
  }
  EXPECT_TRUE(check_enums(opened).ok());
  opened.add_tensors()->set_dtype(static_cast<wire::DType>(wire::INT8 + 1));
  const Status st = check_enums(opened);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("tensors[10].dtype = 11 is not a value of enum DType (valid: 0 "
                                      "DTYPE_UNSPECIFIED, 1 UINT8, 2 FLOAT32, 3 INT64, 4 FLOAT16, 5 BFLOAT16, 6 "
                                      "FLOAT64, 7 INT32, 8 BOOL, 9 INT16, 10 INT8)"),
            std::string::npos)
      << st.error().message();
}

}  // namespace
}  // namespace batchd::daemon
