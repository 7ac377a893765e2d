// admin_wire.h — internal: the plain types of batchd/admin.h to and from proto/batchd.proto's StatusReply (and
// its parts) and ShmReport. Field for field, both ways: from_wire(to_wire(x)) == x, so that the JSON of a status
// (batchctl --json) is the daemon's reply exactly.
#pragma once

#include "batchd.pb.h"
#include "batchd/admin.h"

namespace batchd::detail {

DaemonStatus from_wire(const wire::StatusReply& reply);
wire::StatusReply to_wire(const DaemonStatus& status);

SubscriberStatus from_wire(const wire::SubscriberInfo& subscriber);
StreamStatus from_wire(const wire::StreamInfo& stream);
WorkerStatus from_wire(const wire::WorkerInfo& worker);
DatasetStatus from_wire(const wire::DatasetInfo& dataset);
// remote_wire.cc
RemoteShardsStatus from_wire(const wire::RemoteShardsInfo& remote);
wire::RemoteShardsInfo to_wire(const RemoteShardsStatus& remote);
RemoteCacheStatus from_wire(const wire::RemoteCacheInfo& cache);
wire::RemoteCacheInfo to_wire(const RemoteCacheStatus& cache);
SegmentStatus from_wire(const wire::SegmentInfo& segment);
DaemonHealth from_wire(const wire::HealthReply& health);
wire::SegmentInfo to_wire(const SegmentStatus& segment);
CacheStatus from_wire(const wire::CacheStatus& cache);  // cache_wire.cc
wire::CacheStatus to_wire(const CacheStatus& cache);

// ShmReport is made by the client (shm_report), never received: one way only.
wire::ShmReport to_wire(const ShmReport& report);

}  // namespace batchd::detail
