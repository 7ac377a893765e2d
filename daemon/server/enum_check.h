// enum_check.h — every enum field of a received message holds a value its .proto declares.
//
// proto3 enums are open: a parsed message keeps any number in an enum field, and code that switches over the
// known values would silently treat the unknown one as some default. check_enums() walks the message by
// reflection (every field, nested messages and repeated fields included), so an enum added to any request later
// is checked without new code. The error names the field's path, the value and the valid values, e.g.
//   open_stream.strategy = 7 is not a value of enum SharingStrategy (valid: 0 STRATEGY_DEFAULT, ...)
// Pure; thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include "batchd/result.h"

namespace batchd::daemon {

// kInvalidArgument for the first enum field (in field order) whose value is not declared; ok otherwise.
Status check_enums(const google::protobuf::Message& message);

}  // namespace batchd::daemon
