// admin_wire.cc — admin_wire.h's conversions: each the status type's table, walked by status_table.h.
#include "admin/admin_wire.h"

#include "admin/status_table.h"

namespace batchd::detail {

namespace {

template <typename T, typename Message>
T read(const Message& m) {
  T s;
  read_status(m, &s);
  return s;
}

template <typename Message, typename T>
Message write(const T& s) {
  Message m;
  write_status(s, &m);
  return m;
}

}  // namespace

DaemonStatus from_wire(const wire::StatusReply& reply) { return read<DaemonStatus>(reply); }
wire::StatusReply to_wire(const DaemonStatus& status) { return write<wire::StatusReply>(status); }
DaemonHealth from_wire(const wire::HealthReply& health) { return read<DaemonHealth>(health); }
wire::ShmReport to_wire(const ShmReport& report) { return write<wire::ShmReport>(report); }

}  // namespace batchd::detail
