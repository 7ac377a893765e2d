#include "streams/plan.h"

#include "batchd/wire/segment_layout.h"
#include "streams/external_plan.h"
#include "streams/folder_match.h"
#include "streams/pipeline_plan.h"
#include "streams/sample_subset.h"
#include "streams/stream_settings.h"

namespace batchd::daemon {

namespace {

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }
Error exhausted(const std::string& what) { return Error(ErrorCode::kResourceExhausted, what); }

void set_layout(const std::vector<TensorDesc>& tensors, const std::vector<uint64_t>& sample_bytes,
                const wire::SegmentLayout& layout, uint32_t depth, wire::StreamOpened* opened) {
  opened->set_segment_bytes(layout.segment_bytes);
  opened->set_slot_count(depth);
  opened->set_slot_offset(layout.slot_offset);
  opened->set_slot_stride(layout.slot_stride);
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto* t = opened->add_tensors();
    t->set_name(tensors[i].name);
    t->set_dtype(tensors[i].dtype);
    for (int64_t d : tensors[i].sample_shape) t->add_sample_shape(d);
    t->set_offset(layout.tensor_offsets[i]);
    t->set_sample_bytes(sample_bytes[i]);
  }
}

// The dataset the request names: OpenStream.dataset, or the declared imagefolder dataset its folder reference is.
Result<std::string> dataset_name(const wire::OpenStream& req, const DatasetRegistry& datasets) {
  if (!req.has_folder()) return req.dataset();
  if (!req.dataset().empty()) {
    return invalid("the request names dataset '" + req.dataset().substr(0, 80) + "' and a folder: name one (a "
                   "folder is matched against the daemon's imagefolder datasets)");
  }
  return match_folder(req.folder(), datasets);
}

Status check_share_name(const std::string& name) {
  if (is_name(name)) return ok_status();
  return invalid("share name '" + name.substr(0, 80) + "' is not 1 to 64 characters of A-Z a-z 0-9 . _ -");
}

// The dataset's class names in label order, into `opened` (plan.h: the names only within kMaxClassNamesBytes).
void set_classes(const Dataset& dataset, wire::StreamOpened* opened) {
  const FolderListing* folder = dataset.folder();
  if (folder == nullptr) return;
  opened->set_num_classes(static_cast<uint32_t>(folder->classes.size()));
  size_t bytes = 0;  // encoded: each name, its length (a varint: 2 bytes for names of < 16384) and its tag (2)
  for (const auto& name : folder->classes) bytes += name.size() + 4;
  if (bytes > kMaxClassNamesBytes) return;
  for (const auto& name : folder->classes) opened->add_classes(name);
}

// What the stream reads and makes: a daemon dataset through its pipeline, or a trainer's own Dataset
// (OpenStream.external) whose attached workers make the samples.
struct Source {
  std::string name, key;             // the dataset's name and DatasetRegistry::key ("" for an external one)
  const Dataset* dataset = nullptr;  // null: external
  PipelinePlan pipeline;             // tensors: the pipeline's (or the external fields), without "index"
};

Result<Source> daemon_source(const wire::OpenStream& req, const PlanContext& context,
                             const DatasetRegistry& datasets) {
  auto name = dataset_name(req, datasets);
  if (!name.ok()) return name.error();
  auto dataset = datasets.find(*name);
  if (!dataset.ok()) return dataset.error();
  auto pipeline = plan_pipeline(req, context, **dataset);
  if (!pipeline.ok()) return pipeline.error();
  Source source;
  source.name = *name;
  source.key = datasets.key(*name);
  source.dataset = dataset->get();
  source.pipeline = std::move(pipeline).value();
  return source;
}

Result<Source> external_source(const wire::OpenStream& req, const Limits& limits) {
  auto ext = plan_external(req, limits);
  if (!ext.ok()) return ext.error();
  Source source;
  source.name = std::move(ext->name);
  source.pipeline.tensors = std::move(ext->tensors);
  source.pipeline.samples = ext->samples;
  return source;
}

}  // namespace

Result<StreamPlan> plan(const wire::OpenStream& req, const PlanContext& context, const DatasetRegistry& datasets) {
  const Limits& limits = context.limits;
  if (context.draining) {
    return Error(ErrorCode::kUnavailable, "the daemon is draining (batchctl drain): it finishes the running streams "
                                          "and accepts no new ones; use another daemon or wait for its restart");
  }
  if (context.connection_streams >= limits.max_streams_per_connection) {
    return exhausted("this connection already has " + std::to_string(limits.max_streams_per_connection) +
                     " open streams (limits.max_streams_per_connection); close some");
  }
  if (context.uid_streams >= limits.max_streams_per_uid) {
    return exhausted("uid " + std::to_string(context.uid) + " already has " + std::to_string(context.uid_streams) +
                     " open streams on this daemon, the limit per user (limits.max_streams_per_uid = " +
                     std::to_string(limits.max_streams_per_uid) +
                     "): close some, or ask its operator to raise the key in the daemon's config");
  }
  auto found = req.has_external() ? external_source(req, limits) : daemon_source(req, context, datasets);
  if (!found.ok()) return found.error();
  Source& source = *found;
  const std::string* name = &source.name;
  if (req.batch_size() == 0 || req.batch_size() > limits.max_batch_size) {
    return invalid("batch_size " + std::to_string(req.batch_size()) + " is out of range [1, " +
                   std::to_string(limits.max_batch_size) + "] (limits.max_batch_size)");
  }
  const uint32_t depth = req.depth() == 0 ? limits.default_depth : req.depth();
  if (depth > limits.max_depth) {
    return exhausted("depth " + std::to_string(depth) + " exceeds limits.max_depth (" +
                     std::to_string(limits.max_depth) + ")");
  }
  const bool shared = !req.share().empty();
  if (shared) {
    BATCHD_RETURN_IF_ERROR(check_share_name(req.share()));
    if (req.endless()) {
      return invalid("share '" + req.share() + "': each subscriber reads num_epochs epochs of a shared production, "
                     "so an endless stream must be private; leave share empty, or give num_epochs");
    }
    if (req.writable()) {
      return invalid("share '" + req.share() + "' is read by several trainers: its segment is mapped read-only by "
                     "every subscriber; open it with writable = false (copy a batch to modify it)");
    }
  }
  const uint32_t slots = shared ? depth + context.share_extra_slots : depth;
  if (req.world_size() > kMaxWorldSize) {
    return invalid("world_size " + std::to_string(req.world_size()) + " is over the supported " +
                   std::to_string(kMaxWorldSize) + " ranks");
  }
  std::shared_ptr<const SampleSubset> subset;  // the sampler samples its positions, mapped to dataset indices
  if (req.has_subset()) {
    auto made = SampleSubset::make(req.subset(), source.dataset->size());
    if (!made.ok()) return made.error().with_context("dataset '" + *name + "'");
    subset = std::move(made).value();
  }
  const uint64_t samples = source.pipeline.samples;  // token_window: windows of its T
  auto sampler = Sampler::make({subset ? subset->size() : samples, req.batch_size(), req.shuffle(), req.seed(),
                                req.rank(), req.world_size() == 0 ? 1u : req.world_size(), req.drop_last(), subset,
                                drops_last_batch(req), std::max(req.repeated_aug().repeats(), 1u),
                                req.repeated_aug().selected_samples(),
                                source.pipeline.random_epoch_windows});
  if (!sampler.ok()) return sampler.error().with_context("dataset '" + *name + "'");
  if (req.start_batch() >= sampler->batches_per_epoch()) {
    return invalid("start_batch " + std::to_string(req.start_batch()) + " is past the end of the epoch (" +
                   std::to_string(sampler->batches_per_epoch()) + " batches)");
  }
  if (req.epoch() > (uint64_t{1} << 62)) return invalid("epoch is out of range");
  // The indices of one task must fit in one worker frame (varint int64: at most 10 bytes each).
  const uint64_t task_frame = uint64_t{req.batch_size()} * 10 + 256;
  if (task_frame > limits.max_frame_bytes) {
    return exhausted("batch_size " + std::to_string(req.batch_size()) + " needs frames of up to " +
                     std::to_string(task_frame) + " bytes, over limits.max_frame_bytes (" +
                     std::to_string(limits.max_frame_bytes) + "); lower batch_size or raise the limit");
  }

  // Layout: the pipeline's tensors, then `index`.
  std::vector<TensorDesc> tensors = std::move(source.pipeline.tensors);
  tensors.push_back({"index", wire::INT64, {}});
  std::vector<uint64_t> sample_bytes;
  for (const auto& t : tensors) sample_bytes.push_back(t.sample_bytes());
  auto layout = wire::compute_layout(sample_bytes, req.batch_size(), slots);
  if (!layout || layout->segment_bytes > limits.max_segment_bytes) {
    return exhausted("a segment of " + std::to_string(slots) + " slots" +
                     (shared ? " (depth + shares.max_lag)" : "") + " of " + std::to_string(req.batch_size()) +
                     " samples would exceed limits.max_segment_bytes (" + std::to_string(limits.max_segment_bytes) +
                     " bytes); lower batch_size or depth" + (shared ? " or shares.max_lag" : "") +
                     (source.pipeline.token_windows ? " or seq_len" : ""));
  }
  const wire::SharingStrategy strategy =
      req.strategy() == wire::STRATEGY_DEFAULT ? context.default_strategy : req.strategy();
  if (strategy != wire::FILE_DESCRIPTOR && strategy != wire::FILE_SYSTEM) {  // the connection refuses these first
    return invalid("strategy " + std::to_string(req.strategy()) +
                   " is not a sharing strategy (0 = the daemon's default, 1 = file_descriptor, 2 = file_system)");
  }
  if (req.on_error() != wire::ON_ERROR_FAIL && req.on_error() != wire::ON_ERROR_SKIP) {
    return invalid("on_error " + std::to_string(req.on_error()) + " is not a policy (0 = fail, 1 = skip)");  // idem
  }

  wire::StreamOpened opened;
  opened.set_strategy(strategy);
  set_layout(tensors, sample_bytes, *layout, slots, &opened);
  if (shared) {
    opened.set_window(depth);
    opened.set_share(req.share());
  }
  opened.set_dataset(*name);
  opened.set_dataset_size(samples);
  opened.set_subset_size(subset ? subset->size() : 0);
  if (source.dataset != nullptr) set_classes(*source.dataset, &opened);
  opened.set_samples_per_epoch(sampler->samples_per_epoch());
  opened.set_batches_per_epoch(sampler->batches_per_epoch());
  opened.set_batch_size(req.batch_size());
  opened.set_first_epoch(req.epoch());
  opened.set_num_epochs(req.endless() ? 0 : req.num_epochs() == 0 ? 1 : req.num_epochs());  // 0: endless
  opened.set_start_batch(req.start_batch());

  wire::WorkerAttach attach;
  attach.set_dataset(*name);
  attach.set_dataset_key(source.key);
  attach.set_pipeline(source.pipeline.name);
  attach.set_segment_bytes(opened.segment_bytes());
  attach.set_slot_offset(opened.slot_offset());
  attach.set_slot_stride(opened.slot_stride());
  attach.set_slot_count(opened.slot_count());
  attach.set_batch_size(opened.batch_size());
  *attach.mutable_tensors() = opened.tensors();
  attach.set_seed(req.seed());
  *attach.mutable_pipeline_options() = std::move(source.pipeline.options);
  *attach.mutable_spec() = source.pipeline.spec;
  attach.set_owner_uid(context.uid);
  attach.set_client_spec(source.pipeline.client_spec);
  *opened.mutable_spec() = std::move(source.pipeline.spec);

  StreamPlan planned{std::move(opened), std::move(attach), std::move(sampler).value(), req.on_error(),
                     req.writable(), req.dry_run()};
  planned.external = req.has_external();
  planned.external_workers = req.external().workers();
  planned.external_whole_batches = req.external().whole_batches();
  planned.external_round_robin = req.external().round_robin();
  planned.completion_order = req.external().completion_order();
  return planned;
}

}  // namespace batchd::daemon
