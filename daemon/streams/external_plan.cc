#include "streams/external_plan.h"

#include <set>

#include "batchd/wire/convert.h"
#include "batchd/wire/segment_layout.h"
#include "batchd/wire/utf8.h"
#include "streams/pipeline_plan.h"

namespace batchd::daemon {

namespace {

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }

// The first OpenStream field a request for an external dataset must leave unset, or "".
std::string conflicting_field(const wire::OpenStream& req) {
  if (!req.dataset().empty()) return "dataset";
  if (!req.pipeline().empty()) return "pipeline";
  if (req.has_spec()) return "spec";
  if (req.has_folder()) return "folder";
  if (req.has_subset()) return "subset";
  if (!req.share().empty()) return "share";
  if (req.has_pipeline_options()) return "pipeline_options";
  if (req.seq_len() != 0 || req.sampling() != wire::LmSampling{}) return "seq_len/sampling";
  if (req.crop_size() != 0 || req.resize_size() != 0 || req.exact_decode()) return "crop_size/resize_size/exact_decode";
  return "";
}

}  // namespace

Result<ExternalSource> plan_external(const wire::OpenStream& req, const Limits& limits) {
  const wire::ExternalDataset& ext = req.external();
  if (const std::string field = conflicting_field(req); !field.empty()) {
    return invalid("an external dataset (a trainer's own Dataset, made by its attached workers) has no daemon " +
                   field + ": leave OpenStream." + field + " unset (the Dataset's own code makes each sample; " +
                   (field == "subset" ? "pass a torch.utils.data.Subset as the dataset instead)"
                    : field == "share" ? "a share needs the daemon's own datasets)" : "transforms run in it)"));
  }
  if (ext.size() == 0 || ext.size() > kMaxExternalSize) {
    return invalid("external dataset size " + std::to_string(ext.size()) + " is out of range [1, 2^40]: len(dataset) "
                   "must be positive (an empty Dataset has no batches)");
  }
  if (ext.workers() > limits.max_attached_workers) {
    return Error(ErrorCode::kResourceExhausted,
                 "num_workers " + std::to_string(ext.workers()) + " is over the workers one stream may attach "
                 "(limits.max_attached_workers = " + std::to_string(limits.max_attached_workers) +
                 "): use fewer, or ask the daemon's operator to raise the key");
  }
  if (ext.round_robin() && !ext.whole_batches()) {
    return invalid("external dataset: round_robin needs whole_batches (a worker named for batch j makes all of it)");
  }
  if (ext.fields_size() == 0 && !req.dry_run()) {
    return invalid("external dataset: no fields; a sample must have at least one tensor (the layout of its first "
                   "sample)");
  }
  if (ext.fields_size() > kMaxExternalFields) {
    return invalid("external dataset: a sample of " + std::to_string(ext.fields_size()) + " fields is over the " +
                   std::to_string(kMaxExternalFields) + " supported");
  }
  ExternalSource source;
  source.name = "python:" + (is_name(ext.name()) ? ext.name() : std::string("Dataset"));
  source.samples = ext.size();
  std::set<std::string> names;
  for (int i = 0; i < ext.fields_size(); ++i) {
    const wire::FieldSpec& f = ext.fields(i);
    const std::string where = "external dataset field " + std::to_string(i);
    if (!is_name(f.name()) || f.name() == "index" || !names.insert(f.name()).second) {
      return invalid(where + ": name '" + wire::bounded_utf8(f.name(), 80) +
                     "' is not 1 to 64 characters of A-Z a-z 0-9 . _ -, or is \"index\" (the daemon's own), or "
                     "repeats another field's");
    }
    const size_t itemsize = wire::dtype_size(f.dtype());
    if (itemsize == 0) return invalid(where + " ('" + f.name() + "'): dtype " + std::to_string(f.dtype()) + " unknown");
    if (f.sample_shape_size() > kMaxExternalDims) {
      return invalid(where + " ('" + f.name() + "'): " + std::to_string(f.sample_shape_size()) +
                     " dimensions, over the " + std::to_string(kMaxExternalDims) + " supported");
    }
    for (int64_t d : f.sample_shape()) {
      if (d < 0) return invalid(where + " ('" + f.name() + "'): dimension " + std::to_string(d) + " is negative");
    }
    const auto bytes = wire::checked_sample_bytes(itemsize, {f.sample_shape().begin(), f.sample_shape().end()});
    if (!bytes || *bytes > limits.max_segment_bytes) {
      return Error(ErrorCode::kResourceExhausted,
                   where + " ('" + f.name() + "'): one sample is over limits.max_segment_bytes (" +
                       std::to_string(limits.max_segment_bytes) + " bytes)");
    }
    source.tensors.push_back({f.name(), f.dtype(), {f.sample_shape().begin(), f.sample_shape().end()}});
  }
  return source;
}

}  // namespace batchd::daemon
