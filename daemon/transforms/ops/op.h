// op.h — one op of a pipeline spec (proto PipelineSpec): its schema, its type rule and its kernel.
//
// An OpDef says what an op is: its name (torchvision's, in snake case), the torchvision class it follows, its
// parameters with their types, defaults and ranges (ParamDef: the registry checks them and writes the canonical
// form, see op_registry.h), a type rule (plan: what it takes, what it gives, and the checks the schema cannot make,
// e.g. min <= max), and compile (the kernel one worker runs for one stream). plan runs once per OpenStream in the
// daemon's event loop: it must be cheap and never touch a file. compile runs once per worker and stream; run() once
// per sample, and must not allocate once its buffers have grown to the stream's sizes (the Sample's buffers and the
// kernel's own members are reused from sample to sample). tests/unit/alloc (alloc_tests) counts operator new over a
// pass of samples already seen: 0 for every preset, on an image folder and on WebDataset shards.
//
// Randomness: a sample's random draws come from one SampleRng seeded by (stream seed, epoch, sample index, and its
// copy number under repeated_aug), passed from op to op in spec order (vision_transforms.h); a kernel draws what it
// needs, in the order torchvision draws it, so a sample is the same whichever worker makes it. A deterministic op
// draws nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "data/dataset.h"
#include "transforms/kernels/resample.h"
#include "transforms/kernels/vision_transforms.h"

namespace batchd::daemon::ops {

// What flows from op to op, as the plan knows it.
enum class Kind {
  kEncoded,  // the sample's file (JPEG or PNG bytes): only `decode` takes it
  kImage,    // an 8-bit RGB image, HWC, as a PIL image in mode "RGB" (the ops before to_tensor / pil_to_tensor)
  kTensor,   // a CHW tensor (HWC after layout(order = "HWC")), of `dtype` as torchvision would have it
  kTokens,   // token_window's pair of int64 rows (input_ids, targets) of `width` = T tokens: nothing follows it
};

struct ValueType {
  Kind kind = Kind::kEncoded;
  int height = 0, width = 0;         // 0 = depends on the input image (collate needs both fixed at the end)
  wire::DType dtype = wire::UINT8;   // kTensor: UINT8 after pil_to_tensor, FLOAT32 after to_tensor, ...
  bool hwc = false;                  // kTensor: the layout op made it HWC
  int channels = 3;                  // kImage / kTensor: 3 (RGB) after decode, 1 (grayscale) after idx_image
  bool fixed_size() const { return height > 0 && width > 0; }
};

// One sample while its ops run. The buffers keep their capacity from sample to sample.
struct Sample {
  // kEncoded: the file's bytes and its name (for errors: "<path>: <reason>").
  std::span<const uint8_t> bytes;
  const std::string* name = nullptr;
  // kImage: the current image. An op that cannot work in place writes `spare` and swaps the two.
  RgbImage image, spare;
  // kTensor: channels x height x width values in CHW order (HWC after layout), held as float32 whatever the
  // dtype (uint8 tensors hold 0..255 exactly); the final write casts to the output dtype.
  int channels = 3, height = 0, width = 0;
  std::vector<float> tensor, tensor_spare;
};

// The no-growth rule applied before the first sample: reserves `sample`'s buffers for a value of type `t` when its
// size is fixed (kImage: image and spare to h*w*c bytes; kTensor: tensor to c*h*w values, and tensor_spare when it
// is HWC: only the layout op writes tensor_spare). A size that depends on the input image (after decode, before a
// crop or a resize to [h, w]) is not known: those buffers grow to the largest sample seen and then stay. The spec
// executor calls it for each op's planned output.
void reserve_for(const ValueType& t, Sample* sample);
// The bytes `sample`'s buffers hold (their capacity), for tests and status.
uint64_t reserved_bytes(const Sample& sample);

// Bounds on what a client's spec may ask for (limits.* keys of the daemon's config: streams/stream_settings.h Limits).
struct OpLimits {
  uint32_t max_ops = 64;             // limits.max_ops: ops in a spec, nested ones included
  uint32_t max_output_side = 4096;   // limits.max_output_side: any size an op produces (resize, crops, max_side)
  uint32_t max_kernel_size = 101;    // limits.max_kernel_size: gaussian_blur's kernel_size
  uint32_t max_padding = 1024;       // limits.max_padding: random_crop's padding, per side
  uint64_t max_sample_work = 4'000'000'000;  // limits.max_sample_work: estimated multiply-adds (spec_work.h)
};

// What the plan of one op knows besides its parameters.
struct OpPlanContext {
  const OpLimits* limits = nullptr;
  int64_t num_classes = 0;  // the dataset's classes (imagefolder), 0 when it has none
  // The dataset the spec reads, for the source ops' output (idx_image: its image size; token_window: seq_len 0 =
  // the dataset's, and the bounds its token count sets). Null when a spec is checked without one (a config's
  // [pipelines.NAME] at load): a source op then plans with a placeholder size, and the stream's plan checks again.
  const Dataset* dataset = nullptr;
};

// A parameter's type. Scalars are doubles on the wire (OpValue.number); kInteger also requires an integral value.
enum class ParamType {
  kNumber,          // a number
  kInteger,         // a number with no fractional part
  kFlag,            // true / false
  kText,            // one of `choices`
  kNumbers,         // a list of numbers, min_len..max_len long
  kNumberOrList,    // a number or a list (e.g. size: 224 or [224, 192]; fill: 0 or [r, g, b]); canonical keeps the form
  kNumberOrText,    // a number, a list, or one of `choices` (random_erasing's value: 0, [r, g, b] or "random")
  kOps,             // a list of ops (random_apply, random_choice, random_order)
};

enum class Presence { kRequired, kDefault, kOptional };  // kOptional: absent means None (e.g. max_size)

// One parameter of an op. Every member has an initializer, so a table's designated initializers name only what
// differs from the default (GCC's -Wextra warns about an omitted member that has none).
struct ParamDef {
  std::string key{};
  ParamType type = ParamType::kNumber;
  Presence presence = Presence::kDefault;
  wire::OpValue default_value{};                 // kDefault: written into the canonical form when absent
  double min = -std::numeric_limits<double>::infinity();  // every number given, inclusive
  double max = std::numeric_limits<double>::infinity();
  uint32_t OpLimits::*limit = nullptr;           // also at most this limit (its key named in the error)
  const char* limit_key = "";                    // e.g. "limits.max_output_side"
  std::vector<std::string> choices{};            // kText / kNumberOrText
  size_t min_len = 1, max_len = 1;               // kNumbers / kNumberOrList lists
  std::string doc{};                             // one line for docs and errors: meaning, unit, default
};

// Builders for ParamDef tables.
ParamDef param_def(std::string key, ParamType type, std::string doc);  // the rest defaulted
wire::OpValue number_value(double v);
wire::OpValue numbers_value(std::vector<double> v);
wire::OpValue text_value(std::string v);
wire::OpValue flag_value(bool v);

// The kernel of one per-sample op, for one worker and stream. Not thread-safe.
class SampleKernel {
 public:
  virtual ~SampleKernel() = default;
  // Transforms `sample` (of the type the plan gave this op's input) in place. Errors: kDataError naming the
  // sample (sample.name) for a sample the op cannot take (e.g. a corrupt file at decode).
  virtual Status run(Sample& sample, SampleRng& rng) = 0;
};

// A kernel from a callable fn(Sample&, SampleRng&) -> void holding its op's parameters and buffers (declare the
// lambda mutable when it keeps buffers). For ops that cannot fail per sample.
template <typename Fn>
class FnKernel final : public SampleKernel {
 public:
  explicit FnKernel(Fn fn) : fn_(std::move(fn)) {}
  Status run(Sample& sample, SampleRng& rng) override {
    fn_(sample, rng);
    return ok_status();
  }

 private:
  Fn fn_;
};

template <typename Fn>
Result<std::unique_ptr<SampleKernel>> fn_kernel(Fn fn) {
  return std::unique_ptr<SampleKernel>(std::make_unique<FnKernel<Fn>>(std::move(fn)));
}

// The type rule of an op that takes an image (Kind::kImage) and gives one of the same size: `in`, or an error that
// says what must come first (decode) or what it cannot take (a tensor: image ops go before to_tensor; a grayscale
// image of idx_image: only the tensor conversions take it).
Result<ValueType> need_image(const ValueType& in);

// A batch after collate, for batch ops: the image tensor and the label, in the slot.
struct BatchView {
  uint32_t samples = 0;              // B
  void* images = nullptr;            // [B, C, H, W] (or [B, H, W, C]) of `image_dtype`
  wire::DType image_dtype = wire::FLOAT32;
  uint64_t image_sample_values = 0;  // C*H*W
  int channels = 3, height = 0, width = 0;
  bool hwc = false;
  float* labels = nullptr;           // [B, num_classes] float32 one-hot (with label smoothing applied)
  int64_t num_classes = 0;
};

class BatchKernel {
 public:
  virtual ~BatchKernel() = default;
  virtual Status run(BatchView& batch, SampleRng& rng) = 0;  // rng seeded by (stream seed, epoch, batch index)
};

// Compiles a nested op list (random_apply & co.), for ops that hold others.
using CompileList = std::function<Result<std::vector<std::unique_ptr<SampleKernel>>>(const wire::OpList&,
                                                                                      const ValueType& in)>;

struct OpDef {
  std::string name;          // "random_resized_crop"
  std::string follows;       // "torchvision.transforms.RandomResizedCrop (0.14)", or what it is when not torchvision's
  std::vector<ParamDef> params;
  bool batch_op = false;     // runs after collate (mixup, cutmix)
  bool random = false;       // draws from the sample's rng
  // The output type for input `in`, after the schema checks passed (`op` is canonical). Errors name the parameter,
  // e.g. "scale: min 0.9 is above max 0.5"; the caller prefixes "op 3 (random_resized_crop)".
  std::function<Result<ValueType>(const wire::Op& op, const ValueType& in, const OpPlanContext& context)> plan;
  // Per-sample ops: the kernel for input `in` (as plan saw it).
  std::function<Result<std::unique_ptr<SampleKernel>>(const wire::Op& op, const ValueType& in,
                                                      const CompileList& compile_list)> compile;
  // Optional: rewrites parameters that have two spellings into one (e.g. color_jitter's brightness n into the
  // range [max(0, 1 - n), 1 + n] torchvision stores), after the defaults are written; values it cannot read are
  // left for plan to refuse.
  std::function<void(wire::Op& op)> canonicalize;
  // Batch ops: the kernel.
  std::function<Result<std::unique_ptr<BatchKernel>>(const wire::Op& op, const ValueType& image)> compile_batch;
};

// Parameter access on a canonical op (the registry checked presence and types). number() of a missing key is
// `fallback`; numbers() of a number is a list of one.
const wire::OpValue* param(const wire::Op& op, std::string_view key);
double number(const wire::Op& op, std::string_view key, double fallback = 0);
std::vector<double> numbers(const wire::Op& op, std::string_view key);
std::string text(const wire::Op& op, std::string_view key);
bool flag(const wire::Op& op, std::string_view key);
bool has(const wire::Op& op, std::string_view key);

// A kInvalidArgument error about parameter `key`.
Error param_error(std::string_view key, const std::string& what);

}  // namespace batchd::daemon::ops
