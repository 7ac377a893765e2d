// external_plan.h — the source part of plan() for a trainer's own Python Dataset (OpenStream.external): its size
// and the layout of one sample, as the trainer's workers found it; nothing here is read from disk.
//
// The daemon never runs the dataset's code (docs/operations.md, "Your own Dataset"): the trainer's worker
// processes attach to the stream (AttachWorker) and fill its slots. plan() sizes the segment from these fields.
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "streams/stream_settings.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

// A sample's fields beyond this many are refused (a sample is a tuple or dict of tensors, as default_collate takes).
inline constexpr int kMaxExternalFields = 64;
// Dimensions of one field of one sample.
inline constexpr int kMaxExternalDims = 8;
// len(dataset) bound (the sampler's indices are int64; this keeps every count well inside).
inline constexpr uint64_t kMaxExternalSize = uint64_t{1} << 40;

struct ExternalSource {
  std::string name;                 // display name: "python:<class name>"
  std::vector<TensorDesc> tensors;  // the fields, in order (without "index")
  uint64_t samples = 0;             // len(dataset)
};

// kInvalidArgument naming the field and the fix: a daemon dataset, pipeline, spec, folder, subset, share or lm
// option beside `external`; a size of 0 or over kMaxExternalSize; no fields (unless a dry run: sizes only); a
// field name that is not 1..64 of [A-Za-z0-9._-], "index" or a repeat; an unknown dtype; more than
// kMaxExternalDims dimensions or a negative one; a sample of more than limits.max_segment_bytes. workers over
// limits.max_attached_workers: kResourceExhausted naming the key.
Result<ExternalSource> plan_external(const wire::OpenStream& req, const Limits& limits);

}  // namespace batchd::daemon
