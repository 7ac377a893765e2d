#include "transforms/ops/spec_plan.h"

#include <algorithm>
#include <optional>

#include "transforms/ops/op_registry.h"
#include "transforms/ops/spec_work.h"

namespace batchd::daemon::ops {

namespace {

Error at(const std::string& where, const std::string& name, const Error& e) {
  return Error(e.code(), where + " (" + name.substr(0, 64) + "): " + e.message());
}

struct Planner {
  const OpPlanContext& context;
  uint32_t count = 0;
  uint32_t max_ops;
  uint64_t work = 0;  // the ops' estimated work per sample so far (spec_work.h)

  // Two branches' results (random_apply / random_choice / random_order): equal kinds and dtypes are required; a
  // size that differs between them depends on chance, so the result's is unknown.
  static Result<ValueType> merge(const ValueType& a, const ValueType& b) {
    if (a.kind != b.kind || a.dtype != b.dtype || a.hwc != b.hwc) {
      return Error(ErrorCode::kInvalidArgument, "its ops must give the same kind of value whichever of them run "
                                                "(an image stays an image, a tensor keeps its dtype)");
    }
    ValueType out = a;
    if (a.height != b.height || a.width != b.width) out.height = out.width = 0;
    return out;
  }

  // Plans `ops` (its positions named `where`[i]) from `in`; writes the canonical ops into *out.
  // `types`: when given, each op's output type is appended to it.
  Result<ValueType> plan_list(const google::protobuf::RepeatedPtrField<wire::Op>& ops, ValueType in, bool batch,
                              const std::string& where, google::protobuf::RepeatedPtrField<wire::Op>* out,
                              std::vector<ValueType>* types = nullptr) {
    for (int i = 0; i < ops.size(); ++i) {
      const std::string pos = where + "[" + std::to_string(i) + "]";
      auto next = plan_op(ops[i], in, batch, pos, out->Add());
      if (!next.ok()) return next;
      in = *next;
      if (types != nullptr) types->push_back(in);
    }
    return in;
  }

  Result<ValueType> plan_op(const wire::Op& op, const ValueType& in, bool batch, const std::string& pos,
                            wire::Op* canonical) {
    if (++count > max_ops) {
      return Error(ErrorCode::kInvalidArgument, "the spec has more than " + std::to_string(max_ops) +
                                                    " ops, nested ones included (limits.max_ops): " + pos +
                                                    " is one too many");
    }
    if (op.name().empty()) return Error(ErrorCode::kInvalidArgument, pos + ": has no name (set its \"op\")");
    const OpDef* def = find_op(op.name());
    if (def == nullptr) {
      return at(pos, op.name(), Error(ErrorCode::kInvalidArgument,
                                      "unknown op (known: " + known_op_names(batch) + ")"));
    }
    const bool control = def->name == "random_choice";  // chooses among per-sample ops or among batch ops
    if (!control && def->batch_op != batch) {
      return at(pos, op.name(), Error(ErrorCode::kInvalidArgument,
                                      batch ? "is a per-sample op: put it in ops (Python: transform=)"
                                            : "is a batch op: put it in batch_ops (Python: batch_transform=)"));
    }
    auto checked = check_params(*def, op, *context.limits);
    if (!checked.ok()) return at(pos, op.name(), checked.error());
    *canonical = std::move(checked).value();
    // Nested ops: planned (and canonicalized) in place; their result decides this op's.
    std::optional<ValueType> nested;
    for (auto& p : *canonical->mutable_params()) {
      if (p.value().kind_case() != wire::OpValue::kOps) continue;
      wire::OpList planned;
      ValueType merged = in;
      if (def->name == "random_choice") {
        for (int j = 0; j < p.value().ops().ops_size(); ++j) {
          auto r = plan_op(p.value().ops().ops(j), in, batch, pos + "." + p.key() + "[" + std::to_string(j) + "]",
                           planned.add_ops());
          if (!r.ok()) return r;
          auto m = j == 0 ? Result<ValueType>(*r) : merge(merged, *r);
          if (!m.ok()) return at(pos, op.name(), m.error());
          merged = *m;
        }
      } else {
        auto r = plan_list(p.value().ops().ops(), in, batch, pos + "." + p.key(), planned.mutable_ops());
        if (!r.ok()) return r;
        if (def->name == "random_order" && (r->height != in.height || r->width != in.width)) {
          r->height = r->width = 0;  // the order decides the size
        }
        auto m = merge(in, *r);  // applied or not (random_apply); in some order (random_order)
        if (!m.ok()) return at(pos, op.name(), m.error());
        merged = *m;
      }
      *p.mutable_value()->mutable_ops() = std::move(planned);
      nested = merged;
    }
    auto out = def->plan(*canonical, in, context);
    if (!out.ok()) return at(pos, op.name(), out.error());
    if (auto cost = check_op_cost(*canonical, in, *out, *context.limits, &work); !cost.ok()) {
      return at(pos, op.name(), cost.error());
    }
    return nested ? *nested : *out;
  }
};

// Every number `key` of the batch ops (nested included).
void collect(const google::protobuf::RepeatedPtrField<wire::Op>& ops, std::string_view key, std::vector<double>* out) {
  for (const auto& op : ops) {
    if (const wire::OpValue* v = param(op, key); v != nullptr && v->kind_case() == wire::OpValue::kNumber) {
      out->push_back(v->number());
    }
    if (const wire::OpValue* v = param(op, "ops"); v != nullptr) collect(v->ops().ops(), key, out);
  }
}

// Writes num_classes = k into every batch op (nested included) that takes it and left it to the dataset, so that a
// recipe spelled with and without it (op dicts vs the references' RandomMixup(num_classes)) is one canonical spec.
// Params stay sorted by key.
void resolve_num_classes(google::protobuf::RepeatedPtrField<wire::Op>* ops, int64_t k) {
  for (auto& op : *ops) {
    for (auto& p : *op.mutable_params()) {
      if (p.value().kind_case() != wire::OpValue::kOps) continue;
      resolve_num_classes(p.mutable_value()->mutable_ops()->mutable_ops(), k);
    }
    const OpDef* def = find_op(op.name());
    const bool takes = def != nullptr && std::any_of(def->params.begin(), def->params.end(),
                                                     [](const ParamDef& p) { return p.key == "num_classes"; });
    if (!takes || has(op, "num_classes")) continue;
    auto* added = op.add_params();
    added->set_key("num_classes");
    added->mutable_value()->set_number(static_cast<double>(k));
    std::sort(op.mutable_params()->begin(), op.mutable_params()->end(),
              [](const wire::OpParam& a, const wire::OpParam& b) { return a.key() < b.key(); });
  }
}

// A `cache` op nested anywhere in `ops` (random_apply & co.): the first one's position.
std::optional<std::string> nested_cache(const google::protobuf::RepeatedPtrField<wire::Op>& ops,
                                        const std::string& where) {
  for (int i = 0; i < ops.size(); ++i) {
    const std::string pos = where + "[" + std::to_string(i) + "]";
    if (ops[i].name() == "cache") return pos;
    for (const auto& p : ops[i].params()) {
      if (p.value().kind_case() != wire::OpValue::kOps) continue;
      if (auto found = nested_cache(p.value().ops().ops(), pos + "." + p.key())) return found;
    }
  }
  return std::nullopt;
}

// The cache point's index in the canonical ops (`first`: the index of the request's ops[0] there), or -1; refuses
// a cache point that is nested, repeated, or after a random op.
Result<int> find_cache_point(const wire::PipelineSpec& canonical, int first) {
  auto pos = [&](int i) { return "ops[" + std::to_string(i - first) + "]"; };
  int at = -1;
  for (int i = 0; i < canonical.ops_size(); ++i) {
    const wire::Op& op = canonical.ops(i);
    if (op.name() != "cache") {
      for (const auto& p : op.params()) {
        if (p.value().kind_case() != wire::OpValue::kOps) continue;
        if (auto nested = nested_cache(p.value().ops().ops(), pos(i) + "." + p.key())) {
          return Error(ErrorCode::kInvalidArgument, *nested + " (cache): the cache point goes at the top level of "
                                                    "ops, not inside " + op.name() + ": what it holds must be the "
                                                    "same every epoch");
        }
      }
      continue;
    }
    if (at >= 0) {
      return Error(ErrorCode::kInvalidArgument, pos(i) + " (cache): a spec has one cache point, and " + pos(at) +
                                                    " is one already");
    }
    for (int j = 0; j < i; ++j) {
      const OpDef* def = find_op(canonical.ops(j).name());
      if (def != nullptr && def->random) {
        return Error(ErrorCode::kInvalidArgument,
                     pos(i) + " (cache): " + pos(j) + " (" + def->name + ") before it is random: what reaches the "
                     "cache point must be the same every epoch (tf.data's rule for Dataset.cache); put the cache "
                     "point before " + pos(j) + ", after the deterministic ops (decode, resize, center_crop, ...)");
      }
    }
    at = i;
  }
  return at;
}

}  // namespace

Result<ValueType> plan_op_type(const wire::Op& op, const ValueType& in, int64_t num_classes) {
  const OpPlanContext context{&kNoLimits, num_classes};
  Planner planner{context, 0, kMaxOpsHardLimit};
  wire::Op canonical;
  return planner.plan_op(op, in, false, "op", &canonical);
}

Result<PlannedSpec> plan_spec(const wire::PipelineSpec& spec, const OpPlanContext& context) {
  Planner planner{context, 0, std::min(context.limits->max_ops, kMaxOpsHardLimit)};
  PlannedSpec planned;
  ValueType type{.kind = Kind::kEncoded};
  const std::string& first = spec.ops_size() > 0 ? spec.ops(0).name() : "";
  planned.source = first == "idx_image" ? Source::kIdxImage : first == "token_window" ? Source::kTokenWindow
                                                                                      : Source::kDecode;
  const bool has_decode = first == "decode" || planned.source != Source::kDecode;  // a source op of its own
  if (!has_decode) {  // the implicit decode, with its defaults
    wire::Op decode;
    decode.set_name("decode");
    auto r = planner.plan_op(decode, type, false, "decode", planned.canonical.add_ops());
    if (!r.ok()) return r.error();
    type = *r;
    planned.op_types.push_back(type);
  }
  if (planned.source != Source::kDecode) BATCHD_RETURN_IF_ERROR(check_source_spec(spec, first));
  auto image = planner.plan_list(spec.ops(), type, false, "ops", planned.canonical.mutable_ops(), &planned.op_types);
  if (!image.ok()) return image.error();
  if (planned.source == Source::kTokenWindow) {
    return token_window_plan(std::move(planned), *image, context.dataset != nullptr);
  }
  if (image->kind != Kind::kTensor) {
    return Error(ErrorCode::kInvalidArgument, "the ops end with an image, not a tensor: end them with to_tensor or "
                                              "pil_to_tensor (torchvision's ToTensor / PILToTensor): collate stacks "
                                              "tensors");
  }
  if (!image->fixed_size()) {
    return Error(ErrorCode::kInvalidArgument, "the output's size depends on the input image: collate needs one shape "
                                              "for every sample; end the image ops with a crop or a resize to [h, w] "
                                              "(e.g. center_crop = 224 after resize = 256)");
  }
  auto batch = planner.plan_list(spec.batch_ops(), *image, true, "batch_ops", planned.canonical.mutable_batch_ops());
  if (!batch.ok()) return batch.error();
  auto cache_at = find_cache_point(planned.canonical, has_decode ? 0 : 1);
  if (!cache_at.ok()) return cache_at.error();
  planned.cache_at = *cache_at;
  planned.image = *image;
  const int64_t h = image->height, w = image->width;
  const int64_t c = image->channels;
  planned.tensors.push_back({"image", image->dtype, image->hwc ? std::vector<int64_t>{h, w, c}
                                                               : std::vector<int64_t>{c, h, w}});
  if (spec.batch_ops_size() == 0) {
    planned.tensors.push_back({"label", wire::INT64, {}});
    return planned;
  }
  std::vector<double> classes, smoothing;
  collect(planned.canonical.batch_ops(), "num_classes", &classes);
  collect(planned.canonical.batch_ops(), "label_smoothing", &smoothing);
  for (const auto* values : {&classes, &smoothing}) {
    for (double v : *values) {
      if (v != values->front()) {
        return Error(ErrorCode::kInvalidArgument, std::string("batch_ops: every op must have the same ") +
                                                      (values == &classes ? "num_classes" : "label_smoothing") +
                                                      " (the label is one one-hot tensor)");
      }
    }
  }
  planned.num_classes = classes.empty() ? context.num_classes : static_cast<int64_t>(classes.front());
  if (planned.num_classes <= 0) {
    return Error(ErrorCode::kInvalidArgument, "batch_ops[0]: num_classes is required: the dataset has no classes "
                                              "of its own (an imagefolder has; a webdataset's .cls labels do not say "
                                              "how many)");
  }
  if (context.num_classes > 0 && planned.num_classes < context.num_classes) {
    return Error(ErrorCode::kInvalidArgument, "batch_ops: num_classes " + std::to_string(planned.num_classes) +
                                                  " is below the dataset's " + std::to_string(context.num_classes) +
                                                  " classes; leave it unset to use the dataset's");
  }
  resolve_num_classes(planned.canonical.mutable_batch_ops(), planned.num_classes);
  planned.label_smoothing = smoothing.empty() ? 0.0 : smoothing.front();
  planned.tensors.push_back({"label", wire::FLOAT32, {planned.num_classes}});
  return planned;
}

}  // namespace batchd::daemon::ops
