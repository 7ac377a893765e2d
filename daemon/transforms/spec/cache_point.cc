#include "transforms/spec/cache_point.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "transforms/spec/fused_tail.h"

namespace batchd::daemon {

CachePrefix cache_prefix(const wire::PipelineSpec& canonical, int cache_at) {
  wire::PipelineSpec steps = canonical;
  steps.mutable_ops()->DeleteSubrange(cache_at, 1);
  CachePrefix out;
  out.point = cache_at;
  FusedTail tail;
  if (cache_at == steps.ops_size() && find_tail(steps.ops(), &tail) && tail.to_slot && tail.flips.empty() &&
      tail.dtype != wire::UINT8) {
    out.point = tail.first;
  }
  wire::PipelineSpec prefix;
  for (int i = 0; i < out.point; ++i) {
    *prefix.add_ops() = steps.ops(i);
    out.text += (i == 0 ? "" : " -> ") + steps.ops(i).name();
  }
  // The canonical form has every parameter, sorted: equal prefixes serialize to equal bytes (deterministic: no map
  // fields are involved, and SetSerializationDeterministic pins the rest).
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    prefix.SerializeToCodedStream(&coded);
  }
  // A point that ends the steps keeps the slot's bytes (CachePoint::Kind::kSlot), one inside them the value there:
  // two kinds of entry, two ids, even where the ops before are the same.
  if (out.point == steps.ops_size()) bytes += "#slot";
  out.id = cache_hash(bytes);
  return out;
}

namespace {

// Tests only: the first half of the entry's `bytes` written (from `src`; a pattern where the value needs a
// conversion), then SIGKILL, as a worker killed mid-copy (the OOM killer, an admin) leaves it.
[[noreturn]] void crash_mid_fill(const void* src, uint8_t* out, uint64_t bytes) {
  if (src != nullptr) {
    std::memcpy(out, src, bytes / 2);
  } else {
    std::memset(out, 0x5a, bytes / 2);
  }
  ::raise(SIGKILL);
  std::abort();
}

}  // namespace

bool CachePoint::load(uint64_t index, const FileStamp& stamp, ops::Sample* sample, char* dst, int64_t* label) {
  if (binding_.cache == nullptr) return false;
  const auto found = binding_.cache->find({binding_.dataset, prefix_, static_cast<int64_t>(index)}, stamp);
  if (!found) return false;
  const CachedShape& shape = found->shape;
  if (shape.kind != static_cast<uint8_t>(kind_)) return false;  // cannot be (the id says the kind): never trusted
  const uint8_t* src = found->bytes.data();
  const uint64_t pixels = static_cast<uint64_t>(shape.height) * shape.width;
  switch (kind_) {
    case Kind::kSlot:
      if (found->bytes.size() != slot_bytes_) return false;
      std::memcpy(dst, src, slot_bytes_);
      break;
    case Kind::kImage:
      if (found->bytes.size() != pixels * 3) return false;
      sample->image.width = static_cast<int>(shape.width);
      sample->image.height = static_cast<int>(shape.height);
      sample->image.pixels.assign(src, src + pixels * 3);
      break;
    case Kind::kTensor: {
      const uint64_t values = pixels * shape.channels;
      const bool bytes = shape.dtype == wire::UINT8;
      if (found->bytes.size() != values * (bytes ? 1 : sizeof(float))) return false;
      sample->channels = shape.channels;
      sample->height = static_cast<int>(shape.height);
      sample->width = static_cast<int>(shape.width);
      sample->tensor.resize(values);
      if (bytes) {
        for (uint64_t i = 0; i < values; ++i) sample->tensor[i] = static_cast<float>(src[i]);
      } else {
        std::memcpy(sample->tensor.data(), src, values * sizeof(float));
      }
      break;
    }
  }
  if (!binding_.cache->still_valid(*found)) return false;  // dropped while we copied: computed instead
  *label = shape.label;
  ++counts_.hits;
  return true;
}

void CachePoint::store(uint64_t index, const FileStamp& stamp, const ops::Sample& sample, const char* dst,
                       int64_t label) {
  CachedShape shape;
  shape.kind = static_cast<uint8_t>(kind_);
  shape.label = label;
  uint64_t bytes = slot_bytes_;
  if (kind_ == Kind::kImage) {
    shape.channels = 3;
    shape.height = static_cast<uint32_t>(sample.image.height);
    shape.width = static_cast<uint32_t>(sample.image.width);
    bytes = static_cast<uint64_t>(shape.height) * shape.width * 3;
  } else if (kind_ == Kind::kTensor) {
    shape.channels = static_cast<uint8_t>(sample.channels);
    shape.height = static_cast<uint32_t>(sample.height);
    shape.width = static_cast<uint32_t>(sample.width);
    // uint8 values (pil_to_tensor) are whole numbers 0..255 held as floats: kept as bytes, exactly. A -0.0 (255 - x
    // of normalize(mean = 255, std = -1)) is not one: as a byte it would come back +0.0.
    bool whole = true;
    for (float v : sample.tensor) {
      if (!(v >= 0 && v <= 255 && !std::signbit(v) && v == static_cast<float>(static_cast<uint8_t>(v)))) {
        whole = false;
        break;
      }
    }
    shape.dtype = whole ? wire::UINT8 : wire::FLOAT32;
    bytes = sample.tensor.size() * (whole ? 1 : sizeof(float));
  }
  std::optional<SampleCache::Fill> fill;
  if (binding_.cache != nullptr) {
    fill = binding_.cache->begin_fill({binding_.dataset, prefix_, static_cast<int64_t>(index)}, stamp, shape, bytes,
                                      binding_.uid, binding_.uid_bounded);
  }
  if (!fill) {
    ++counts_.uncached;
    return;
  }
  uint8_t* out = fill->bytes().data();
  if (static_cast<int64_t>(index) == binding_.crash_in_fill && binding_.crash_once != nullptr &&
      binding_.crash_once->exchange(1) == 0) {
    const void* src = kind_ == Kind::kSlot    ? static_cast<const void*>(dst)
                      : kind_ == Kind::kImage ? static_cast<const void*>(sample.image.pixels.data())
                      : shape.dtype == wire::UINT8 ? nullptr : static_cast<const void*>(sample.tensor.data());
    crash_mid_fill(src, out, bytes);
  }
  if (kind_ == Kind::kSlot) {
    std::memcpy(out, dst, bytes);
  } else if (kind_ == Kind::kImage) {
    std::memcpy(out, sample.image.pixels.data(), bytes);
  } else if (shape.dtype == wire::UINT8) {
    for (size_t i = 0; i < sample.tensor.size(); ++i) out[i] = static_cast<uint8_t>(sample.tensor[i]);
  } else {
    std::memcpy(out, sample.tensor.data(), bytes);
  }
  fill->commit();
  ++counts_.fills;
}

}  // namespace batchd::daemon
