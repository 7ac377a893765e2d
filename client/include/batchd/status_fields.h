// batchd/status_fields.h — how the status types (batchd/daemon_status.h, cache_status.h, remote_status.h and
// admin.h's ShmReport) are declared: each is one table of its fields, and everything else is made from that table.
//
// A table is a macro that calls F once per field, in the struct's member order (aggregate initialization keeps
// working; the proto message may number its fields in another order):
//
//     F(type, name)         a member `type name{}` carried by the proto field `name`
//     F(type, name, wire)   ... carried by the proto field `wire` (StageTimes: read_nanos <-> StageNanos.read)
//
// From it come the struct's members (BATCHD_STATUS_MEMBER), the conversion from the daemon's reply and to the proto
// message that --json renders (client/src/admin/status_table.h: protobuf reflection, by field name), and the Python
// dict (client/python/status_dict.h). A new status field is one line of the proto and one line of its table; the client
// unit test StatusTableTest checks that every field of each message has exactly one line, and that each value reaches
// the JSON and back. Every member starts value-initialized (0, false, empty, kDefault). The tables call variadic
// macros with no variadic argument: C++20 (batchd::client requires it of its users).
#pragma once

#define BATCHD_STATUS_MEMBER(type, name, ...) type name{};
