// The source ops: what a spec reads its samples from when the dataset holds no image files. A spec starts with one
// source op: decode (image files: geometry_ops.cc; implicit when a spec starts with another op), idx_image (an IDX
// dataset's images) or token_window (a token dataset's windows, token_window.h). Each plans its output from the
// dataset (OpPlanContext.dataset); the executor that runs a spec is chosen by its source op (spec/compile_spec.h).
#include <algorithm>
#include <memory>

#include "data/idx_dataset.h"
#include "transforms/ops/op_registry.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/ops/tensor_ops.h"
#include "transforms/ops/token_window.h"

namespace batchd::daemon::ops {

namespace {

Result<ValueType> first_only(const ValueType& in) {
  if (in.kind == Kind::kEncoded) return in;
  return Error(ErrorCode::kInvalidArgument, "comes once, first: it reads the dataset's samples");
}

OpDef idx_image_def() {
  OpDef d;
  d.name = "idx_image";
  d.follows = "torchvision.datasets.FashionMNIST / MNIST's __getitem__ (Image.fromarray(img.numpy(), mode=\"L\")): "
              "the IDX file's 8-bit grayscale image, 1 x rows x cols";
  d.plan = [](const wire::Op&, const ValueType& in, const OpPlanContext& context) -> Result<ValueType> {
    auto first = first_only(in);
    if (!first.ok()) return first;
    int rows = 1, cols = 1;  // no dataset (a config pipeline checked at load): the stream's plan sizes it
    if (context.dataset != nullptr) {
      const auto* idx = dynamic_cast<const IdxDataset*>(context.dataset);
      if (idx == nullptr) {
        return Error(ErrorCode::kInvalidArgument, "needs an idx dataset; '" + context.dataset->name() + "' is " +
                                                      context.dataset->format());
      }
      rows = static_cast<int>(idx->rows());
      cols = static_cast<int>(idx->cols());
    }
    return ValueType{.kind = Kind::kImage, .height = rows, .width = cols, .channels = 1};
  };
  return d;  // no kernel: the idx executor runs the whole spec (spec/idx_pipeline.h)
}

OpDef token_window_def() {
  OpDef d;
  d.name = "token_window";
  d.follows = "nanoGPT's get_batch: x = data[i:i+T], y = data[i+1:i+1+T] as int64 (token_window.h)";
  d.params = {{.key = "seq_len", .type = ParamType::kInteger, .default_value = number_value(0), .min = 0,
               .doc = "T, the window's tokens (input_ids and targets are [T] int64 each); 0 = the dataset's "
                      "datasets.NAME.seq_len; at most 16777216 and the dataset's token count - 1"},
              {.key = "sampling", .type = ParamType::kText, .default_value = text_value("tiled"),
               .choices = {"tiled", "random"},
               .doc = "tiled: sample i starts at token i*T; random: at token i (every offset, drawn anew each "
                      "batch)"}};
  d.plan = [](const wire::Op& op, const ValueType& in, const OpPlanContext& context) -> Result<ValueType> {
    auto first = first_only(in);
    if (!first.ok()) return first;
    // The bound first: token_window_options reads seq_len as a uint32_t.
    BATCHD_RETURN_IF_ERROR(check_seq_len_bound(static_cast<uint64_t>(std::min(number(op, "seq_len"), 1e18))));
    wire::LmOptions options = token_window_options(op);
    if (context.dataset != nullptr) {
      auto resolved = resolve_lm_options(options, *context.dataset);
      if (!resolved.ok()) return resolved.error();
      options = *resolved;
    }
    // No dataset: seq_len 0 stays "the dataset's" (a placeholder T of 1 for the check).
    return ValueType{.kind = Kind::kTokens, .height = 1, .width = static_cast<int>(std::max(1u, options.seq_len())),
                     .dtype = wire::INT64};
  };
  return d;  // no kernel: the token executor runs the whole spec (spec/token_pipeline.h)
}

}  // namespace

// What a spec with a source op of its own (idx_image, token_window) may hold besides it: token_window makes the whole
// sample; after idx_image come only the pointwise tensor ops and layout, which its executor runs as one table.
Status check_source_spec(const wire::PipelineSpec& spec, const std::string& source) {
  auto pos = [](const char* list, int i, const wire::Op& op) {
    return std::string(list) + "[" + std::to_string(i) + "] (" + op.name().substr(0, 64) + "): ";
  };
  if (spec.batch_ops_size() > 0) {
    return Error(ErrorCode::kInvalidArgument, pos("batch_ops", 0, spec.batch_ops(0)) + "batch ops mix images and "
                                              "one-hot labels of an image dataset; a spec that starts with " +
                                              source + " takes none");
  }
  for (int i = 1; i < spec.ops_size(); ++i) {
    const wire::Op& op = spec.ops(i);
    if (source == "token_window") {
      return Error(ErrorCode::kInvalidArgument, pos("ops", i, op) + "token_window makes the whole sample "
                                                "(input_ids, targets): nothing follows it");
    }
    if (!is_pointwise(op) && op.name() != "layout") {
      return Error(ErrorCode::kInvalidArgument, pos("ops", i, op) + "after idx_image batchd runs only to_tensor, "
                                                "pil_to_tensor, convert_image_dtype, normalize and layout");
    }
  }
  return ok_status();
}

// A token_window spec's plan: its seq_len resolved into the canonical op (the dataset's when 0), and its tensors.
// `resolved`: the plan had the dataset (without it, T is a placeholder and seq_len stays as given).
PlannedSpec token_window_plan(PlannedSpec planned, const ValueType& windows, bool resolved) {
  planned.image = windows;
  for (auto& p : *planned.canonical.mutable_ops(0)->mutable_params()) {
    if (p.key() == "seq_len" && resolved) p.mutable_value()->set_number(windows.width);
  }
  const int64_t t = windows.width;
  planned.tensors = {{"input_ids", wire::INT64, {t}}, {"targets", wire::INT64, {t}}};
  return planned;
}

void add_source_ops(std::vector<OpDef>* defs) {
  defs->push_back(idx_image_def());
  defs->push_back(token_window_def());
}

}  // namespace batchd::daemon::ops
