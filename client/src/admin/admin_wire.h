// admin_wire.h — internal: the status types of batchd/admin.h to and from proto/batchd_admin.proto's messages, made
// from their tables (batchd/status_fields.h) by status_table.h. from_wire reads the daemon's replies; to_wire makes the
// message that the JSON of a status or a /dev/shm report is rendered from (batchctl --json), so that
// from_wire(to_wire(x)) == x and the JSON of a status is the daemon's reply.
#pragma once

#include "batchd.pb.h"
#include "batchd/admin.h"

namespace batchd::detail {

DaemonStatus from_wire(const wire::StatusReply& reply);
wire::StatusReply to_wire(const DaemonStatus& status);
DaemonHealth from_wire(const wire::HealthReply& health);
// ShmReport is made by the client (shm_report), never received: one way only.
wire::ShmReport to_wire(const ShmReport& report);

}  // namespace batchd::detail
