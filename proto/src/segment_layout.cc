#include "batchd/wire/segment_layout.h"

namespace batchd::wire {

namespace {
bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }
}  // namespace

std::optional<uint64_t> checked_sample_bytes(uint64_t itemsize, const std::vector<int64_t>& shape) {
  uint64_t n = itemsize;
  for (int64_t d : shape) {
    if (d < 0 || mul_overflows(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

bool fits_within(uint64_t offset, uint64_t bytes, uint64_t count, uint64_t limit) {
  uint64_t all, end;
  return !mul_overflows(bytes, count, &all) && !add_overflows(offset, all, &end) && end <= limit;
}

std::optional<SegmentLayout> compute_layout(const std::vector<uint64_t>& sample_bytes, uint64_t batch_size,
                                            uint32_t slot_count) {
  SegmentLayout layout;
  uint64_t offset = kSlotHeaderBytes;
  for (uint64_t per_sample : sample_bytes) {
    offset = align_up(offset, kTensorAlignment);
    layout.tensor_offsets.push_back(offset);
    uint64_t bytes;
    if (mul_overflows(per_sample, batch_size, &bytes) || add_overflows(offset, bytes, &offset)) return std::nullopt;
    if (offset > (uint64_t{1} << 48)) return std::nullopt;
  }
  layout.slot_stride = align_up(offset, kPageBytes);
  layout.slot_offset = kPageBytes;
  uint64_t slots_bytes;
  if (mul_overflows(layout.slot_stride, slot_count, &slots_bytes) ||
      add_overflows(layout.slot_offset, slots_bytes, &layout.segment_bytes)) {
    return std::nullopt;
  }
  return layout;
}

}  // namespace batchd::wire
