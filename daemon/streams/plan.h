// plan.h — everything OpenStream decides, decided in one pure function before anything is allocated.
//
// plan() validates the request against the limits and the datasets, resolves the pipeline's options once (with
// every default applied), sizes the sampler and computes the segment layout. It is the only builder of the
// StreamOpened reply and of the WorkerAttach that workers receive; the segment pool later stamps the stream id and
// segment name into both (segment_pool.h). A dry-run OpenStream stops after plan().
//
// Pure in effect: no shared memory, no clock, no I/O beyond the (already loaded) datasets. The pipeline, its spec and
// its tensors come from plan_pipeline (pipeline_plan.h), which plans the spec without building a pipeline object.
// Unit-tested without a daemon (tests/unit/daemon/streams/plan_test.cc).
#pragma once

#include <cstddef>
#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "batchd/wire/framing.h"
#include "streams/stream_settings.h"
#include "data/dataset.h"
#include "streams/sampler.h"

namespace batchd::daemon {

// What plan() needs to know besides the request and the datasets.
struct PlanContext {
  Limits limits;
  wire::SharingStrategy default_strategy = wire::FILE_DESCRIPTOR;  // for strategy = STRATEGY_DEFAULT
  bool draining = false;          // batchctl drain: every OpenStream is refused (kUnavailable)
  size_t connection_streams = 0;  // streams already open on the requesting connection
  uint32_t uid = 0;               // the requester's uid
  size_t uid_streams = 0;         // streams (and subscriptions) already open by that uid, on all its connections
  uint32_t share_extra_slots = 8; // shares.max_lag: a shared stream's segment has depth + this many slots
  const std::map<std::string, wire::PipelineSpec>* pipelines = nullptr;  // the config's [pipelines]
};

struct StreamPlan {
  wire::StreamOpened opened;  // the reply (without stream_id, segment_name, fd_attached: the segment pool's)
  wire::WorkerAttach attach;  // what a worker needs to make the stream's batches (without stream_id)
  Sampler sampler;            // this rank's sample order, batch by batch
  wire::OnError on_error = wire::ON_ERROR_FAIL;
  bool writable = false;  // the client maps the segment read-write
  bool dry_run = false;   // size only: create nothing
  // OpenStream.external: the trainer's attached workers make the samples (external_plan.h); how many it starts.
  bool external = false;
  uint32_t external_workers = 0;
  bool external_whole_batches = false;  // ExternalDataset.whole_batches: the trainer's workers collate batches
  bool external_round_robin = false;    // ExternalDataset.round_robin: batch j to attached worker j % workers
  bool completion_order = false;        // ExternalDataset.completion_order: batches delivered as they are made
  // Batch ops (mixup, cutmix), and attached workers that collate, need the whole batch in one task: the stream is
  // not cut into chunks.
  bool whole_batches() const { return attach.spec().batch_ops_size() > 0 || external_whole_batches; }

  uint64_t segment_bytes() const { return opened.segment_bytes(); }
  const std::string& dataset() const { return attach.dataset(); }
};

inline constexpr uint32_t kMaxWorldSize = 1u << 20;
// Whether `request` drops the last, shorter batch of each epoch: drop_last_batch when set, else drop_last.
inline bool drops_last_batch(const wire::OpenStream& request) {
  return request.has_drop_last_batch() ? request.drop_last_batch() : request.drop_last();
}
// StreamOpened.classes is sent only when the class names take at most this many bytes encoded (counted as each
// name plus 4 bytes of tag and length): half of the client's frame bound (wire::kDefaultMaxFrameBytes, 1 MiB), the
// rest of the reply being a few KiB, so the reply fits whatever the dataset (ImageNet-21k's 21,841 WordNet ids
// count ~280 KiB). num_classes is sent either way.
inline constexpr size_t kMaxClassNamesBytes = wire::kDefaultMaxFrameBytes / 2;

// The plan for `request`, or the first problem with it: kUnavailable while draining; kResourceExhausted for a
// limit (streams per connection, depth, segment size, frame size), naming the limit's config key; kNotFound for
// an unknown dataset or pipeline; kInvalidArgument for a malformed option (naming it and its valid range).
// A request with `share` set is planned as a shared production: share names are 1..64 characters of [A-Za-z0-9._-]
// (kInvalidArgument otherwise), writable is refused (subscribers map it read-only), and the segment gets depth +
// share_extra_slots slots while the reply's window stays depth.
// A request with `folder` instead of `dataset` names the declared imagefolder dataset that folder is
// (streams/folder_match.h: kNotFound / kInvalidArgument naming the cause and the fixes otherwise); the reply's
// `dataset` names it. A request with `subset` reads only those dataset indices (streams/sample_subset.h); the reply's
// subset_size counts them. An imagefolder dataset's classes go into num_classes and (within kMaxClassNamesBytes)
// classes, in label order. A request with `repeated_aug` reads each index `repeats` times per epoch (0 = 1 = off;
// over kMaxRepeatedAug: kInvalidArgument), cut to `selected_samples` per rank when set (streams/sampler.h); the
// reply's samples_per_epoch and batches_per_epoch count the repeated epoch.
// A request with `external` (a trainer's own Dataset) names no daemon dataset or pipeline: its fields are the
// tensors (then "index"), its size the dataset's; external_plan.h lists what it refuses.
// Legacy top-level vision fields (crop_size, resize_size, exact_decode) are mapped into
// pipeline_options.vision; setting both is refused.
Result<StreamPlan> plan(const wire::OpenStream& request, const PlanContext& context, const DatasetRegistry& datasets);

}  // namespace batchd::daemon
