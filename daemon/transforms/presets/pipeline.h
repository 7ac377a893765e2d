// pipeline.h — transform pipelines: per-sample transforms, then collate into a slot's fixed-shape tensors.
//
// A pipeline is chosen by name at OpenStream and built against a dataset. It declares its tensors (name, dtype,
// per-sample shape) and fills them for a batch of sample indices, writing the final bytes straight into the slot
// (the only copy of the data after the dataset). Every stream also carries an `index` tensor (int64 [B]) that the
// worker writes itself (see worker.cc).
//
// The pipelines by name and their specs: presets.h. Every pipeline is a planned spec run by the executor its source
// op picks (spec/compile_spec.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "data/dataset.h"
#include "transforms/spec/cache_point.h"

namespace batchd::daemon {

struct TensorDesc {
  std::string name;
  wire::DType dtype;
  std::vector<int64_t> sample_shape;
  // dtype size * product(sample_shape); UINT64_MAX when that overflows or a dimension is negative, which
  // wire::compute_layout then refuses (no plan can lay out such a tensor).
  uint64_t sample_bytes() const;
};

// Fault injection for tests only (--fault-crash-on-sample, --fault-hang-on-sample): a worker that reaches the
// sample crashes (SIGSEGV) or hangs (sleeps until it is killed). -1: off.
// --fault-crash-in-cache-fill: the first worker that fills the cache entry of that sample (cache_point.h) writes
// half of its bytes and SIGKILLs itself; once per daemon (cache_fill_crashed, a flag in memory the workers share
// since share_fault_flags()), so the task's redo fills the entry and the stream goes on.
struct FaultInjection {
  int64_t crash_on_sample = -1;
  int64_t hang_on_sample = -1;
  int64_t crash_in_cache_fill = -1;
  std::atomic<uint32_t>* cache_fill_crashed = nullptr;
};

// Maps the flags of `faults` that its workers share (cache_fill_crashed) in an anonymous shared page, kept for the
// process's life; call before the workers fork. kIo naming mmap on failure; nothing to do when no fault needs one.
Status share_fault_flags(FaultInjection* faults);

// Pipelines call at(index) before they touch each sample. It records the sample in the worker's progress page
// (worker_progress.h), so that if the sample crashes or hangs the worker the daemon knows which one it was; and,
// only under fault injection (tests), crashes or hangs the worker on the chosen sample.
class SampleProgress {
 public:
  SampleProgress() = default;
  SampleProgress(std::atomic<int64_t>* current, FaultInjection faults) : current_(current), faults_(faults) {}
  void at(int64_t index) const {
    if (current_ != nullptr) current_->store(index, std::memory_order_relaxed);
    if (index == faults_.crash_on_sample) crash();
    if (index == faults_.hang_on_sample) hang();
  }

 private:
  [[noreturn]] static void crash();
  [[noreturn]] static void hang();
  std::atomic<int64_t>* current_ = nullptr;
  FaultInjection faults_;
};

// What a batch is made for: the stream's seed, the batch's epoch and (with repeated_aug) each sample's copy number
// seed the per-sample random transforms.
struct BatchContext {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  SampleProgress progress{};
  uint64_t batch = 0;  // the batch's index within its epoch (seeds the batch ops)
  // Repeated augmentation: the copy number of each index given to run() (WorkerTask.copies), which seeds the
  // sample's draws with it; empty = every copy 0 (no repeated_aug). Points into the task; valid during the call.
  std::span<const uint32_t> copies{};
};

// Nanoseconds spent per stage since the last take_stage_times() (for the per-stage breakdown in batchctl status).
// With a cache point (transforms/spec/cache_point.h), read_ns also counts the copies out of the cache, and the counts
// say what it did for the samples.
struct StageTimes {
  uint64_t read_ns = 0, decode_ns = 0, resize_ns = 0, normalize_ns = 0;
  uint64_t cache_hits = 0, cache_fills = 0, cache_uncached = 0;
};

// Nanoseconds since `t` (a stage's start); moves `t` to now, the next stage's start.
inline uint64_t stage_ns(std::chrono::steady_clock::time_point& t) {
  const auto now = std::chrono::steady_clock::now();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - t).count();
  t = now;
  return static_cast<uint64_t>(ns);
}

// One Pipeline object per worker and stream; run() is not thread-safe (it reuses scratch buffers).
class Pipeline {
 public:
  virtual ~Pipeline() = default;
  // The pipeline's tensors, in slot order (without `index`).
  virtual const std::vector<TensorDesc>& tensors() const = 0;
  // Transforms and collates `indices` into the slot: tensor i starts at slot + offsets[i] and has room for
  // indices.size() samples. A per-sample failure returns a kDataError naming the sample's file and the reason;
  // the sample it failed on is the progress's last at().
  virtual Status run(std::span<const int64_t> indices, char* slot, std::span<const uint64_t> offsets,
                     const BatchContext& context) = 0;
  virtual StageTimes take_stage_times() { return {}; }
  // The bytes of the per-sample buffers the pipeline holds now (their capacity): what compile reserved from the
  // planned types (ops/op.h reserve_for), then what samples of sizes the plan could not know grew them to.
  virtual uint64_t reserved_bytes() const { return 0; }
  // True when the pipeline has batch ops (mixup, cutmix): each batch must be made by one task, and the worker
  // calls finish_batch() once every row is in the slot (offsets: row 0 of each tensor; samples: the batch's).
  virtual bool whole_batches() const { return false; }
  virtual Status finish_batch(char* /*slot*/, std::span<const uint64_t> /*offsets*/, uint32_t /*samples*/,
                              const BatchContext& /*context*/) {
    return ok_status();
  }
};

// Builds the pipeline for `dataset`: `spec` when it has ops (canonical, as the plan wrote it), else preset `name`
// with `options` (presets.h plan_for_dataset, under the hard bounds only), compiled by its source op
// (spec/compile_spec.h). kNotFound for an unknown name, kInvalidArgument if the pipeline does not fit the dataset
// (naming its format) or does not plan. `cache`: the worker's cache and the stream's key and owner, for a spec with a
// cache point (cache_point.h).
Result<std::unique_ptr<Pipeline>> make_pipeline(const std::string& name, std::shared_ptr<const Dataset> dataset,
                                                const wire::PipelineOptions& options = {},
                                                const wire::PipelineSpec& spec = {}, const CacheBinding& cache = {});

}  // namespace batchd::daemon
