// wire_mapping.h — internal: the public types of batchd/client.h to and from the wire messages of
// proto/batchd_client.proto. The one place the client maps each of them (enums, OpenStream, StreamInfo), so that
// Client, StreamCore and the admin API agree.
#pragma once

#include <optional>

#include "batchd.pb.h"
#include "batchd/client.h"

namespace batchd::detail {

// Enums, value for value (kDefault <-> STRATEGY_DEFAULT; an unknown strategy maps to kDefault). A dtype this client
// does not know (a newer daemon's) has no mapping: nullopt, and the stream is refused (stream_core.cc), since its
// bytes cannot be read as any type the client has.
wire::SharingStrategy to_wire(SharingStrategy strategy);
SharingStrategy from_wire(wire::SharingStrategy strategy);
wire::DType to_wire(DType dtype);
std::optional<DType> from_wire(wire::DType dtype);

// The checks a StreamOpened must pass before its segment is used (kProtocol naming the stream): slots within the
// `mapped_bytes` mapped, each tensor within its slot and of a dtype this client knows.
Status check_stream_opened(const wire::StreamOpened& opened, size_t mapped_bytes);

// A pipeline spec, op for op and value for value (pipeline_spec.cc); from_wire reads an unset OpValue as an empty
// list of numbers.
wire::PipelineSpec to_wire(const PipelineSpec& spec);
PipelineSpec from_wire(const wire::PipelineSpec& spec);

// The OpenStream request for `options` (dry_run unset; spec set when options.spec is not empty).
wire::Request open_request(const StreamOptions& options);

// What the daemon made (or, for a dry run, would make) for a stream. segment_name is "/dev/shm/<name>" for a
// named segment, "" otherwise (file_descriptor, or a dry run); total_batches is wire::total_batches(opened); spec
// the canonical spec.
StreamInfo stream_info(const wire::StreamOpened& opened);

}  // namespace batchd::detail
