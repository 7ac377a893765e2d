// batchd/pipeline_spec.h — a pipeline as data: the ops a stream runs per sample and per batch, sent with the
// stream's options (StreamOptions::spec in batchd/client.h) instead of a pipeline name.
//
//   batchd::PipelineSpec spec;
//   spec.ops = {batchd::Op("random_resized_crop").set("size", 176).set("interpolation", "bilinear"),
//               batchd::Op("horizontal_flip").set("p", 0.5),
//               batchd::Op("trivial_augment_wide"),
//               batchd::Op("pil_to_tensor"),
//               batchd::Op("convert_image_dtype").set("dtype", "float32"),
//               batchd::Op("normalize").set("mean", {0.485, 0.456, 0.406}).set("std", {0.229, 0.224, 0.225}),
//               batchd::Op("random_erasing").set("p", 0.1)};
//   spec.batch_ops = {batchd::Op("random_choice").set("ops", {batchd::Op("mixup").set("alpha", 0.2).set("p", 1.0),
//                                                             batchd::Op("cutmix").set("alpha", 1.0).set("p", 1.0)})};
//   options.spec = spec;   // options.pipeline "" (or a display name that no preset or config pipeline has)
//
// The ops, their parameters and defaults are torchvision 0.14's (docs/operations.md, "Pipelines"): the same model
// as a [pipelines.NAME] table in the daemon's config and as Python's Loader(transform=...). This header only builds
// the value; the daemon checks it, once, when it plans the stream (open_stream / plan_stream): an unknown op or
// parameter, a value of the wrong kind or out of range, an op that does not fit its input (normalize before the
// image is float), a spec whose output size depends on the image (it must end in a crop or a resize to [h, w]), or
// more ops, larger sizes, kernels or padding than the daemon's limits.max_ops, limits.max_output_side,
// limits.max_kernel_size, limits.max_padding allow — each refused with kInvalidArgument naming the op's position
// (in the spec as sent: ops[0] is the first op given) and key, e.g. "pipeline 'custom': ops[3] (normalize): mean:
// has 2 numbers; expected a list of 3 numbers". A spec with a preset's or a config pipeline's name, or with
// VisionOptions, is refused the same way. StreamInfo::spec returns the spec in the daemon's canonical form (its source
// op first: decode, idx_image or token_window; every parameter present with its default, keys sorted, numbers as
// doubles).
//
// Plain values: copyable, no shared state; thread-compatible.
#pragma once

#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace batchd {

class Op;

// A parameter's value, one of the wire's kinds (proto/batchd_client.proto OpValue): a number (every scalar: 224 and
// 224.0 are one value), a list of numbers ([h, w], (min, max), per-channel mean/std/fill), a text (a choice such as
// "bicubic"), a flag, or a list of ops (random_apply / random_choice / random_order).
using OpValue = std::variant<double, std::vector<double>, std::string, bool, std::vector<Op>>;

// One op: a name and its parameters, in the order set. set() with a key already present replaces its value.
class Op {
 public:
  explicit Op(std::string name) : name_(std::move(name)) {}

  template <typename Number, std::enable_if_t<std::is_arithmetic_v<Number> && !std::is_same_v<Number, bool>, int> = 0>
  Op& set(const std::string& key, Number number) { return put(key, static_cast<double>(number)); }
  Op& set(const std::string& key, std::initializer_list<double> numbers) {
    return put(key, std::vector<double>(numbers));
  }
  Op& set(const std::string& key, std::vector<double> numbers) { return put(key, std::move(numbers)); }
  Op& set(const std::string& key, const char* text) { return put(key, std::string(text)); }
  Op& set(const std::string& key, std::string text) { return put(key, std::move(text)); }
  Op& set(const std::string& key, bool flag) { return put(key, flag); }
  Op& set(const std::string& key, std::vector<Op> ops) { return put(key, std::move(ops)); }

  const std::string& name() const { return name_; }
  const std::vector<std::pair<std::string, OpValue>>& params() const { return params_; }
  // The value of `key`, or nullptr.
  const OpValue* find(const std::string& key) const;

 private:
  Op& put(const std::string& key, OpValue value);

  std::string name_;
  std::vector<std::pair<std::string, OpValue>> params_;
};

// The ops of a stream: per sample, in order (the first is a source op: `decode`, which the daemon adds when no source
// op is given, `idx_image` for an idx dataset or `token_window` for a tokens one), then per
// batch after collate (mixup, cutmix, random_choice of them; the label becomes a float32 one-hot). Empty = none:
// the stream's pipeline is then the one named by StreamOptions::pipeline.
struct PipelineSpec {
  std::vector<Op> ops;
  std::vector<Op> batch_ops;

  bool empty() const { return ops.empty() && batch_ops.empty(); }
};

}  // namespace batchd
