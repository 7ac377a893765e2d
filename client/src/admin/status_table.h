// status_table.h — internal: each status type's table (batchd/status_fields.h) as a visitor, and what is made from
// it by protobuf reflection: the type from its proto message (read_status) and back (write_status, for --json).
//
// StatusTable<T>::each(s, visit) calls visit("proto_field_name", s.member) for every line of T's table, in order;
// T's message is the proto message of the same role (StatusReply for DaemonStatus, ...: admin_wire.cc). A value
// is converted by its C++ type: integers (any width, from any integer proto type), double, bool, std::string,
// SharingStrategy (the proto enum), a status type (a nested message) and std::vector of those (a repeated field).
// A field the message lacks is skipped (StatusTableTest shows there is none).
#pragma once

#include <google/protobuf/message.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "batchd.pb.h"
#include "batchd/admin.h"
#include "core/wire_mapping.h"

namespace batchd::detail {

template <typename T>
struct StatusTable {
  static constexpr bool kIsTable = false;
};

// The proto field name of a table line (batchd/status_fields.h): `wire` when given, else `name`, as a string literal.
#define BATCHD_STATUS_WIRE_NAME(type, name, ...) \
  BATCHD_STATUS_STR_(BATCHD_STATUS_FIRST_(__VA_ARGS__ __VA_OPT__(, ) name))
#define BATCHD_STATUS_FIRST_(first, ...) first
#define BATCHD_STATUS_STR_(x) BATCHD_STATUS_STR2_(x)
#define BATCHD_STATUS_STR2_(x) #x

#define BATCHD_STATUS_VISIT_(type, name, ...) \
  visit(BATCHD_STATUS_WIRE_NAME(type, name __VA_OPT__(, ) __VA_ARGS__), s.name);
#define BATCHD_STATUS_TABLE_(Type, TABLE)               \
  template <>                                           \
  struct StatusTable<Type> {                            \
    static constexpr bool kIsTable = true;              \
    template <typename S, typename Visit>               \
    static void each(S& s, Visit&& visit) {             \
      TABLE(BATCHD_STATUS_VISIT_)                       \
    }                                                   \
  };
BATCHD_STATUS_TABLE_(StageTimes, BATCHD_STAGE_TIMES_FIELDS)
BATCHD_STATUS_TABLE_(WorkerStatus, BATCHD_WORKER_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(SubscriberStatus, BATCHD_SUBSCRIBER_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(StreamStatus, BATCHD_STREAM_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(SegmentStatus, BATCHD_SEGMENT_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(DatasetStatus, BATCHD_DATASET_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(DaemonStatus, BATCHD_DAEMON_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(DaemonHealth, BATCHD_DAEMON_HEALTH_FIELDS)
BATCHD_STATUS_TABLE_(CacheGroupStatus, BATCHD_CACHE_GROUP_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(CacheStatus, BATCHD_CACHE_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(RemoteShardsStatus, BATCHD_REMOTE_SHARDS_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(RemoteCacheStatus, BATCHD_REMOTE_CACHE_STATUS_FIELDS)
BATCHD_STATUS_TABLE_(ShmFile, BATCHD_SHM_FILE_FIELDS)
BATCHD_STATUS_TABLE_(ShmClient, BATCHD_SHM_CLIENT_FIELDS)
BATCHD_STATUS_TABLE_(ShmReport, BATCHD_SHM_REPORT_FIELDS)
#undef BATCHD_STATUS_TABLE_
#undef BATCHD_STATUS_VISIT_
#undef BATCHD_STATUS_WIRE_NAME
#undef BATCHD_STATUS_FIRST_
#undef BATCHD_STATUS_STR_
#undef BATCHD_STATUS_STR2_

template <typename T>
inline constexpr bool kIsStatus = StatusTable<T>::kIsTable;
template <typename T>
struct IsVector : std::false_type {};
template <typename E>
struct IsVector<std::vector<E>> : std::true_type {};

// Whether field `field` of `s` is put on the message: nested messages are, except the two that proto3 would call
// optional, as the daemon sends them: a dataset's remote shards (only for remote data) and the remote shard cache
// (only when enabled). Only nested messages are asked.
inline bool field_on_wire(const DatasetStatus& s, std::string_view field) {
  return field != "remote" || s.remote.shards > 0;
}
inline bool field_on_wire(const DaemonStatus& s, std::string_view field) {
  return field != "remote_cache" || s.remote_cache.enabled;
}
template <typename T>
bool field_on_wire(const T&, std::string_view) {
  return true;
}

// Value `index` of field `f` of `m` (index < 0: the singular field) into `out`.
template <typename T>
void get_value(const google::protobuf::Message& m, const google::protobuf::FieldDescriptor* f, int index, T* out);

template <typename T>
void read_status(const google::protobuf::Message& m, T* s) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  StatusTable<T>::each(*s, [&](const char* name, auto& member) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr) return;
    using Member = std::decay_t<decltype(member)>;
    if constexpr (IsVector<Member>::value) {
      member.resize(static_cast<size_t>(m.GetReflection()->FieldSize(m, f)));
      for (size_t i = 0; i < member.size(); ++i) get_value(m, f, static_cast<int>(i), &member[i]);
    } else {
      get_value(m, f, -1, &member);
    }
  });
}

template <typename T>
void get_value(const google::protobuf::Message& m, const google::protobuf::FieldDescriptor* f, int index, T* out) {
  const google::protobuf::Reflection* r = m.GetReflection();
  const bool one = index < 0;
  using Cpp = google::protobuf::FieldDescriptor;
  if constexpr (kIsStatus<T>) {
    read_status(one ? r->GetMessage(m, f) : r->GetRepeatedMessage(m, f, index), out);
  } else if constexpr (std::is_same_v<T, std::string>) {
    *out = one ? r->GetString(m, f) : r->GetRepeatedString(m, f, index);
  } else if constexpr (std::is_same_v<T, SharingStrategy>) {
    *out = from_wire(static_cast<wire::SharingStrategy>(one ? r->GetEnumValue(m, f)
                                                            : r->GetRepeatedEnumValue(m, f, index)));
  } else if constexpr (std::is_same_v<T, bool>) {
    *out = one ? r->GetBool(m, f) : r->GetRepeatedBool(m, f, index);
  } else if constexpr (std::is_floating_point_v<T>) {
    *out = static_cast<T>(one ? r->GetDouble(m, f) : r->GetRepeatedDouble(m, f, index));
  } else {
    static_assert(std::is_integral_v<T>, "a status member of a type status_table.h does not convert");
    auto one_of = [&](auto singular, auto repeated) { return static_cast<T>(one ? singular() : repeated()); };
    switch (f->cpp_type()) {
      case Cpp::CPPTYPE_INT32:
        *out = one_of([&] { return r->GetInt32(m, f); }, [&] { return r->GetRepeatedInt32(m, f, index); });
        break;
      case Cpp::CPPTYPE_INT64:
        *out = one_of([&] { return r->GetInt64(m, f); }, [&] { return r->GetRepeatedInt64(m, f, index); });
        break;
      case Cpp::CPPTYPE_UINT32:
        *out = one_of([&] { return r->GetUInt32(m, f); }, [&] { return r->GetRepeatedUInt32(m, f, index); });
        break;
      case Cpp::CPPTYPE_UINT64:
        *out = one_of([&] { return r->GetUInt64(m, f); }, [&] { return r->GetRepeatedUInt64(m, f, index); });
        break;
      default: break;
    }
  }
}

// Value `v` into field `f` of `m`: set (singular) or appended (repeated).
template <typename T>
void put_value(const T& v, const google::protobuf::FieldDescriptor* f, google::protobuf::Message* m);

template <typename T>
void write_status(const T& s, google::protobuf::Message* m) {
  const google::protobuf::Descriptor* d = m->GetDescriptor();
  StatusTable<T>::each(s, [&](const char* name, const auto& member) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr) return;
    using Member = std::decay_t<decltype(member)>;
    if constexpr (IsVector<Member>::value) {
      for (const auto& v : member) put_value(v, f, m);
    } else if constexpr (kIsStatus<Member>) {
      if (field_on_wire(s, name)) put_value(member, f, m);
    } else {
      put_value(member, f, m);
    }
  });
}

template <typename T>
void put_value(const T& v, const google::protobuf::FieldDescriptor* f, google::protobuf::Message* m) {
  const google::protobuf::Reflection* r = m->GetReflection();
  const bool one = !f->is_repeated();
  using Cpp = google::protobuf::FieldDescriptor;
  if constexpr (kIsStatus<T>) {
    write_status(v, one ? r->MutableMessage(m, f) : r->AddMessage(m, f));
  } else if constexpr (std::is_same_v<T, std::string>) {
    one ? r->SetString(m, f, v) : r->AddString(m, f, v);
  } else if constexpr (std::is_same_v<T, SharingStrategy>) {
    one ? r->SetEnumValue(m, f, to_wire(v)) : r->AddEnumValue(m, f, to_wire(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    one ? r->SetBool(m, f, v) : r->AddBool(m, f, v);
  } else if constexpr (std::is_floating_point_v<T>) {
    one ? r->SetDouble(m, f, v) : r->AddDouble(m, f, v);
  } else {
    static_assert(std::is_integral_v<T>, "a status member of a type status_table.h does not convert");
    switch (f->cpp_type()) {
      case Cpp::CPPTYPE_INT32: {
        const auto x = static_cast<int32_t>(v);
        one ? r->SetInt32(m, f, x) : r->AddInt32(m, f, x);
        break;
      }
      case Cpp::CPPTYPE_INT64: {
        const auto x = static_cast<int64_t>(v);
        one ? r->SetInt64(m, f, x) : r->AddInt64(m, f, x);
        break;
      }
      case Cpp::CPPTYPE_UINT32: {
        const auto x = static_cast<uint32_t>(v);
        one ? r->SetUInt32(m, f, x) : r->AddUInt32(m, f, x);
        break;
      }
      case Cpp::CPPTYPE_UINT64: {
        const auto x = static_cast<uint64_t>(v);
        one ? r->SetUInt64(m, f, x) : r->AddUInt64(m, f, x);
        break;
      }
      default: break;
    }
  }
}

}  // namespace batchd::detail
