#include "core/wire_mapping.h"

#include "batchd/wire/convert.h"

namespace batchd::detail {

wire::SharingStrategy to_wire(SharingStrategy strategy) {
  switch (strategy) {
    case SharingStrategy::kFileDescriptor: return wire::FILE_DESCRIPTOR;
    case SharingStrategy::kFileSystem: return wire::FILE_SYSTEM;
    case SharingStrategy::kDefault: break;
  }
  return wire::STRATEGY_DEFAULT;
}

SharingStrategy from_wire(wire::SharingStrategy strategy) {
  switch (strategy) {
    case wire::FILE_DESCRIPTOR: return SharingStrategy::kFileDescriptor;
    case wire::FILE_SYSTEM: return SharingStrategy::kFileSystem;
    default: return SharingStrategy::kDefault;
  }
}

wire::DType to_wire(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return wire::FLOAT32;
    case DType::kInt64: return wire::INT64;
    case DType::kFloat16: return wire::FLOAT16;
    case DType::kBFloat16: return wire::BFLOAT16;
    case DType::kFloat64: return wire::FLOAT64;
    case DType::kInt32: return wire::INT32;
    case DType::kBool: return wire::BOOL;
    case DType::kInt16: return wire::INT16;
    case DType::kInt8: return wire::INT8;
    case DType::kUInt8: break;
  }
  return wire::UINT8;
}

std::optional<DType> from_wire(wire::DType dtype) {
  switch (dtype) {
    case wire::UINT8: return DType::kUInt8;
    case wire::FLOAT32: return DType::kFloat32;
    case wire::INT64: return DType::kInt64;
    case wire::FLOAT16: return DType::kFloat16;
    case wire::BFLOAT16: return DType::kBFloat16;
    case wire::FLOAT64: return DType::kFloat64;
    case wire::INT32: return DType::kInt32;
    case wire::BOOL: return DType::kBool;
    case wire::INT16: return DType::kInt16;
    case wire::INT8: return DType::kInt8;
    default: return std::nullopt;
  }
}

Status check_stream_opened(const wire::StreamOpened& o, size_t mapped_bytes) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kProtocol, "stream " + std::to_string(o.stream_id()) + ": " + why);
  };
  if (o.slot_count() == 0 || o.slot_stride() == 0) return bad("segment has no slots");
  if (o.segment_bytes() > mapped_bytes) return bad("segment is smaller than announced");
  if (o.slot_offset() + uint64_t{o.slot_count()} * o.slot_stride() > o.segment_bytes()) {
    return bad("slots extend past the segment");
  }
  for (const auto& t : o.tensors()) {
    if (t.offset() + t.sample_bytes() * o.batch_size() > o.slot_stride()) return bad("tensor past its slot");
    if (!from_wire(t.dtype())) {
      return bad("tensor '" + t.name() + "' has dtype " + std::to_string(static_cast<int>(t.dtype())) +
                 ", which this client does not know: upgrade the batchd client library to the daemon's version");
    }
  }
  return ok_status();
}

wire::Request open_request(const StreamOptions& o) {
  wire::Request request;
  auto* open = request.mutable_open_stream();
  open->set_dataset(o.dataset);
  open->set_pipeline(o.pipeline);
  open->set_batch_size(o.batch_size);
  open->set_shuffle(o.shuffle);
  open->set_seed(o.seed);
  open->set_epoch(o.epoch);
  open->set_num_epochs(o.endless ? 0 : o.num_epochs);
  open->set_endless(o.endless);
  open->set_rank(o.rank);
  open->set_world_size(o.world_size);
  open->set_drop_last(o.drop_last);
  if (o.drop_last_batch) open->set_drop_last_batch(*o.drop_last_batch);
  if (o.repeated_aug != 1 || o.selected_samples != 0) {  // unset otherwise: the request is as before
    open->mutable_repeated_aug()->set_repeats(o.repeated_aug);
    open->mutable_repeated_aug()->set_selected_samples(o.selected_samples);
  }
  open->set_depth(o.depth);
  open->set_start_batch(o.start_batch);
  open->set_strategy(to_wire(o.strategy));
  open->set_on_error(o.on_error == OnError::kSkip ? wire::ON_ERROR_SKIP : wire::ON_ERROR_FAIL);
  if (o.vision.any_set()) {
    auto* vision = open->mutable_pipeline_options()->mutable_vision();
    vision->set_crop_size(o.vision.crop_size);
    vision->set_resize_size(o.vision.resize_size);
    vision->set_exact_decode(o.vision.exact_decode);
    // The same values at the top level, where daemons before 0.2 read them (newer ones check that they agree).
    open->set_crop_size(o.vision.crop_size);
    open->set_resize_size(o.vision.resize_size);
    open->set_exact_decode(o.vision.exact_decode);
  }
  open->set_seq_len(o.lm.seq_len);
  open->set_sampling(o.lm.sampling == LmSampling::kRandomWindows ? wire::RANDOM_WINDOWS : wire::TILED_WINDOWS);
  open->set_writable(o.writable);
  open->set_share(o.share);
  if (!o.spec.empty()) *open->mutable_spec() = to_wire(o.spec);
  if (!o.folder.empty()) {
    auto* folder = open->mutable_folder();
    folder->set_root(o.folder.root);
    for (const auto& c : o.folder.classes) folder->add_classes(c);
    folder->set_num_samples(o.folder.num_samples);
    for (uint64_t n : o.folder.class_sizes) folder->add_class_sizes(n);
    folder->set_digest(o.folder.digest);
  }
  if (!o.external.empty()) {
    auto* ext = open->mutable_external();
    ext->set_size(o.external.size);
    ext->set_workers(o.external.workers);
    ext->set_name(o.external.name);
    ext->set_whole_batches(o.external.whole_batches);
    ext->set_round_robin(o.external.round_robin);
    ext->set_completion_order(o.external.completion_order);
    for (const auto& f : o.external.fields) {
      auto* field = ext->add_fields();
      field->set_name(f.name);
      field->set_dtype(to_wire(f.dtype));
      for (int64_t d : f.sample_shape) field->add_sample_shape(d);
    }
  }
  if (o.indices) {  // runs of consecutive indices: range(a, n) is one (start, length)
    auto* subset = open->mutable_subset();
    for (size_t i = 0; i < o.indices->size();) {
      size_t j = i + 1;
      while (j < o.indices->size() && (*o.indices)[j] == (*o.indices)[j - 1] + 1) ++j;
      subset->add_run_starts((*o.indices)[i]);
      subset->add_run_lengths(j - i);
      i = j;
    }
  }
  return request;
}

StreamInfo stream_info(const wire::StreamOpened& o) {
  StreamInfo info;
  info.id = o.stream_id();
  info.strategy = from_wire(o.strategy());
  info.segment_name = o.segment_name().empty() ? "" : "/dev/shm/" + o.segment_name();
  info.segment_bytes = o.segment_bytes();
  info.depth = o.window() != 0 ? o.window() : o.slot_count();
  info.batch_size = o.batch_size();
  info.dataset = o.dataset();
  info.dataset_size = o.dataset_size();
  info.subset_size = o.subset_size();
  info.samples_per_epoch = o.samples_per_epoch();
  info.batches_per_epoch = o.batches_per_epoch();
  info.total_batches = wire::total_batches(o);
  info.endless = o.num_epochs() == 0;
  info.first_epoch = o.first_epoch();
  info.share = o.share();
  info.joined_at_batch = o.joined_at_batch();
  info.spec = from_wire(o.spec());
  info.num_classes = o.num_classes();
  info.classes.assign(o.classes().begin(), o.classes().end());
  return info;
}

}  // namespace batchd::detail
