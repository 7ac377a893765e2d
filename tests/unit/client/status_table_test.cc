// The status tables (batchd/status_fields.h): each status type's table names every field of its proto message once,
// and every value a table carries reaches the message (what batchctl --json renders) and comes back unchanged. A
// field added to a proto message without its table line, or to a table without a proto field, fails here.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "admin/admin_wire.h"
#include "admin/status_table.h"

namespace batchd::detail {
namespace {

// Each table's type and the proto message it mirrors.
template <typename T>
std::multiset<std::string> table_names() {
  std::multiset<std::string> names;
  T s;
  StatusTable<T>::each(s, [&](const char* name, auto&) { names.insert(name); });
  return names;
}

template <typename T>
void expect_one_line_per_field(const google::protobuf::Descriptor* message) {
  SCOPED_TRACE(message->full_name());
  const auto names = table_names<T>();
  std::set<std::string> fields;
  for (int i = 0; i < message->field_count(); ++i) fields.insert(message->field(i)->name());
  for (const auto& f : fields) EXPECT_EQ(names.count(f), 1u) << "field " << f << " needs exactly one table line";
  for (const auto& n : names) EXPECT_TRUE(fields.count(n)) << "table line " << n << " names no field of the message";
}

template <typename T>
struct ElementOf {
  using type = T;
};
template <typename E>
struct ElementOf<std::vector<E>> {
  using type = E;
};

// Each integer member holds its field's whole range: as wide, and signed exactly when the field is.
template <typename T>
void expect_members_hold_their_fields(const google::protobuf::Descriptor* message) {
  T s;
  StatusTable<T>::each(s, [&](const char* name, auto& member) {
    using Member = std::decay_t<decltype(member)>;
    using Value = typename ElementOf<Member>::type;
    const google::protobuf::FieldDescriptor* f = message->FindFieldByName(name);
    if (f == nullptr) return;  // EveryFieldOfEachStatusMessageHasExactlyOneTableLine says so
    using Cpp = google::protobuf::FieldDescriptor;
    if constexpr (kIsStatus<Value>) {
      expect_members_hold_their_fields<Value>(f->message_type());
    } else if constexpr (std::is_integral_v<Value> && !std::is_same_v<Value, bool>) {
      const auto t = f->cpp_type();
      const bool is_signed = t == Cpp::CPPTYPE_INT32 || t == Cpp::CPPTYPE_INT64;
      const size_t bits = (t == Cpp::CPPTYPE_INT64 || t == Cpp::CPPTYPE_UINT64) ? 64 : 32;
      EXPECT_EQ(std::is_signed_v<Value>, is_signed) << message->full_name() << "." << name;
      EXPECT_GE(sizeof(Value) * 8, bits) << message->full_name() << "." << name;
    }
  });
}

TEST(StatusTableTest, IntegerMembersHoldTheirFieldsWholeRange) {
  expect_members_hold_their_fields<DaemonStatus>(wire::StatusReply::descriptor());
  expect_members_hold_their_fields<DaemonHealth>(wire::HealthReply::descriptor());
  expect_members_hold_their_fields<ShmReport>(wire::ShmReport::descriptor());
}

// The members whose field has another name, checked by hand: a table that swapped two of them would still come
// back unchanged.
TEST(StatusTableTest, RenamedMembersReachTheirOwnFields) {
  DaemonStatus status;
  status.streams.resize(1);
  status.streams[0].stages = {.read_nanos = 1, .decode_nanos = 2, .resize_nanos = 3, .normalize_nanos = 4};
  const wire::StageNanos& w = to_wire(status).streams(0).stages();
  EXPECT_EQ(w.read(), 1u);
  EXPECT_EQ(w.decode(), 2u);
  EXPECT_EQ(w.resize(), 3u);
  EXPECT_EQ(w.normalize(), 4u);
}

TEST(StatusTableTest, EveryFieldOfEachStatusMessageHasExactlyOneTableLine) {
  expect_one_line_per_field<StageTimes>(wire::StageNanos::descriptor());
  expect_one_line_per_field<WorkerStatus>(wire::WorkerInfo::descriptor());
  expect_one_line_per_field<SubscriberStatus>(wire::SubscriberInfo::descriptor());
  expect_one_line_per_field<StreamStatus>(wire::StreamInfo::descriptor());
  expect_one_line_per_field<SegmentStatus>(wire::SegmentInfo::descriptor());
  expect_one_line_per_field<DatasetStatus>(wire::DatasetInfo::descriptor());
  expect_one_line_per_field<DaemonStatus>(wire::StatusReply::descriptor());
  expect_one_line_per_field<DaemonHealth>(wire::HealthReply::descriptor());
  expect_one_line_per_field<CacheGroupStatus>(wire::CacheGroupInfo::descriptor());
  expect_one_line_per_field<CacheStatus>(wire::CacheStatus::descriptor());
  expect_one_line_per_field<RemoteShardsStatus>(wire::RemoteShardsInfo::descriptor());
  expect_one_line_per_field<RemoteCacheStatus>(wire::RemoteCacheInfo::descriptor());
  expect_one_line_per_field<ShmFile>(wire::ShmFile::descriptor());
  expect_one_line_per_field<ShmClient>(wire::ClientFds::descriptor());
  expect_one_line_per_field<ShmReport>(wire::ShmReport::descriptor());
}

// Every member a value of its own (1, 2, 3, ...; strings "s<n>"; true; file_system), one element per vector.
struct Filler {
  uint64_t next = 1;
  template <typename T>
  void fill(T* v) {
    if constexpr (kIsStatus<T>) {
      StatusTable<T>::each(*v, [&](const char*, auto& member) { fill(&member); });
    } else if constexpr (IsVector<T>::value) {
      v->resize(1);
      for (auto& e : *v) fill(&e);
    } else if constexpr (std::is_same_v<T, std::string>) {
      *v = "s" + std::to_string(next++);
    } else if constexpr (std::is_same_v<T, SharingStrategy>) {
      *v = SharingStrategy::kFileSystem;
    } else if constexpr (std::is_same_v<T, bool>) {
      *v = true;
    } else {
      *v = static_cast<T>(next++);
    }
  }
};

std::string json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;  // no always_print_primitive_fields: a key only for a value set
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out, options).ok());
  return out;
}

// The number of fields set anywhere in `m` (nested messages and each element counted).
int fields_set(const google::protobuf::Message& m) {
  std::vector<const google::protobuf::FieldDescriptor*> set;
  m.GetReflection()->ListFields(m, &set);
  int n = static_cast<int>(set.size());
  for (const auto* f : set) {
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int i = 0; i < m.GetReflection()->FieldSize(m, f); ++i) {
        n += fields_set(m.GetReflection()->GetRepeatedMessage(m, f, i));
      }
    } else {
      n += fields_set(m.GetReflection()->GetMessage(m, f));
    }
  }
  return n;
}

// Every field of every message reachable from `d`, nested ones as often as they appear once each.
int fields_of(const google::protobuf::Descriptor* d) {
  int n = d->field_count();
  for (int i = 0; i < d->field_count(); ++i) {
    if (const auto* nested = d->field(i)->message_type()) n += fields_of(nested);
  }
  return n;
}

TEST(StatusTableTest, EveryValueReachesTheMessageAndComesBack) {
  DaemonStatus status;
  Filler{}.fill(&status);
  const wire::StatusReply reply = to_wire(status);
  EXPECT_EQ(fields_set(reply), fields_of(wire::StatusReply::descriptor()))
      << "every field of the reply, nested ones too, carries a value: " << json(reply);
  EXPECT_EQ(json(to_wire(from_wire(reply))), json(reply)) << "the way back loses nothing";
  EXPECT_NE(json(reply).find("\"read\":\""), std::string::npos) << "StageTimes::read_nanos is StageNanos.read";

  ShmReport report;
  Filler{}.fill(&report);
  const wire::ShmReport shm = to_wire(report);
  EXPECT_EQ(fields_set(shm), fields_of(wire::ShmReport::descriptor())) << json(shm);
}

TEST(StatusTableTest, OptionalNestedMessagesAreOnTheWireOnlyWhenTheDaemonSendsThem) {
  DaemonStatus status;
  status.dataset_entries.resize(1);  // local data: remote.shards == 0
  const wire::StatusReply reply = to_wire(status);
  EXPECT_FALSE(reply.has_remote_cache()) << "a disabled remote cache is left out, as the daemon leaves it";
  EXPECT_FALSE(reply.dataset_entries(0).has_remote()) << "local data has no remote shards";
  EXPECT_TRUE(reply.has_cache()) << "the sample cache's totals are always there";
  status.remote_cache.enabled = true;
  status.dataset_entries[0].remote.shards = 3;
  const wire::StatusReply remote = to_wire(status);
  EXPECT_TRUE(remote.has_remote_cache());
  EXPECT_EQ(remote.dataset_entries(0).remote().shards(), 3u);
}

}  // namespace
}  // namespace batchd::detail
