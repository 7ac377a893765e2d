#include "server/enum_check.h"

#include <google/protobuf/descriptor.h>

namespace batchd::daemon {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

Error undeclared(const std::string& path, const google::protobuf::EnumDescriptor& type, int value) {
  std::string valid;
  for (int i = 0; i < type.value_count(); ++i) {
    valid += (i ? ", " : "") + std::to_string(type.value(i)->number()) + " " + type.value(i)->name();
  }
  return Error(ErrorCode::kInvalidArgument, path + " = " + std::to_string(value) + " is not a value of enum " +
                                                type.name() + " (valid: " + valid +
                                                "); is the client newer than the daemon?");
}

Status check(const Message& message, const std::string& prefix) {
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);  // the fields present, in field-number order
  for (const FieldDescriptor* field : fields) {
    const std::string path = prefix + field->name();
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
      const int n = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
      for (int i = 0; i < n; ++i) {
        const int value = field->is_repeated() ? reflection->GetRepeatedEnumValue(message, field, i)
                                               : reflection->GetEnumValue(message, field);
        if (field->enum_type()->FindValueByNumber(value) == nullptr) {
          return undeclared(field->is_repeated() ? path + "[" + std::to_string(i) + "]" : path, *field->enum_type(),
                            value);
        }
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          BATCHD_RETURN_IF_ERROR(
              check(reflection->GetRepeatedMessage(message, field, i), path + "[" + std::to_string(i) + "]."));
        }
      } else {
        BATCHD_RETURN_IF_ERROR(check(reflection->GetMessage(message, field), path + "."));
      }
    }
  }
  return ok_status();
}

}  // namespace

Status check_enums(const Message& message) { return check(message, ""); }

}  // namespace batchd::daemon
