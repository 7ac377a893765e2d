// cache_point.h — a spec pipeline's `cache` op (spec_plan.h): what the deterministic ops before it made of a sample,
// read from or written to the daemon's host-wide SampleCache (cache/sample_cache.h).
//
// The value at the point is one of: the RGB image (before to_tensor: e.g. decode(max_side = 256) -> cache, FFCV's
// pre-resized store); a tensor's values (after to_tensor: uint8 tensors kept as bytes, others as float32); or, when
// the point ends the ops, the sample's bytes in the slot (val224 -> cache: a hit is one copy into the slot). The
// entry also keeps the sample's label, so a hit reads no file: it stats it (FileStamp), and an entry made from
// another version of the file is not used.
//
// The ops before the point draw nothing from the sample's rng (the plan refuses random ones), so the ops after it
// draw the same numbers whether the value was cached or computed: cached and uncached streams give bit-identical
// batches. One per worker and stream (spec_pipeline.cc); not thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "batchd.pb.h"
#include "cache/sample_cache.h"
#include "transforms/ops/op.h"

namespace batchd::daemon {

// What a worker knows of a stream's cache point besides its spec (WorkerAttach).
struct CacheBinding {
  SampleCache* cache = nullptr;  // null: the daemon runs without a cache (cache.max_bytes = 0): every sample computed
  uint64_t dataset = 0;          // cache_hash(the dataset's key, DatasetRegistry::key)
  uint32_t uid = 0;              // the stream's owner
  bool uid_bounded = false;      // a client-sent spec: its fills count against cache.max_bytes_per_uid
  // Tests only (FaultInjection::crash_in_cache_fill): the worker that fills sample `crash_in_fill`'s entry writes
  // half of it and SIGKILLs itself, if it is the first (*crash_once goes 0 -> 1). -1: off.
  int64_t crash_in_fill = -1;
  std::atomic<uint32_t>* crash_once = nullptr;
};

// Where the point of canonical spec `canonical` with its cache op at index `cache_at` (PlannedSpec::cache_at) is
// taken, in the steps (the ops without the cache op): `point` steps run before it. A point that ends the steps right
// after a tensor conversion to a float dtype that the spec pipeline fuses into one pass (fused_tail.h: to_tensor,
// then normalize, convert_image_dtype, layout) is taken before that conversion: the entry keeps the uint8 image (a
// quarter of val224's float32 bytes, half of a float16 / bfloat16 output's) and a hit re-runs the conversion, deterministic and bit-identical (a uint8
// output, as val224_u8's, is kept as the slot's bytes: as small, and a hit is one copy). `id`
// hashes the steps before the point; `text` names them ("decode -> resize -> center_crop").
struct CachePrefix {
  int point = 0;
  uint64_t id = 0;
  std::string text;
};
CachePrefix cache_prefix(const wire::PipelineSpec& canonical, int cache_at);

// Per task: what the cache did for its samples (WorkerDone.stages).
struct CacheCounts {
  uint64_t hits = 0;      // served from an entry
  uint64_t fills = 0;     // computed and kept
  uint64_t uncached = 0;  // computed and not kept (the cache, the uid's share or its index full; no cache)
};

class CachePoint {
 public:
  enum class Kind : uint8_t { kImage = 1, kTensor = 2, kSlot = 3 };
  // `kind` from the plan's type at the point; `slot_bytes`: the image tensor's bytes per sample (kSlot).
  CachePoint(CacheBinding binding, uint64_t prefix, Kind kind, uint64_t slot_bytes)
      : binding_(binding), prefix_(prefix), kind_(kind), slot_bytes_(slot_bytes) {}

  // Sample `index` (its file now as `stamp`) from the cache into *sample (kImage, kTensor) or dst (kSlot), its label
  // into *label. False on a miss (nothing of *sample or dst is to be trusted then: the caller computes the value).
  bool load(uint64_t index, const FileStamp& stamp, ops::Sample* sample, char* dst, int64_t* label);
  // Keeps the value just computed (after a miss), if the cache admits it; counts a fill or an uncached sample.
  void store(uint64_t index, const FileStamp& stamp, const ops::Sample& sample, const char* dst, int64_t label);

  CacheCounts take_counts() { return std::exchange(counts_, CacheCounts{}); }

 private:
  CacheBinding binding_;
  uint64_t prefix_;
  Kind kind_;
  uint64_t slot_bytes_;
  CacheCounts counts_;
};

}  // namespace batchd::daemon
