// segment_layout.h — the byte layout of a stream's shared-memory segment, shared by daemon, workers and clients.
//
//   offset 0            SegmentHeader (versioned), padded to one page
//   slot_offset         slot 0: SlotHeader (kSlotHeaderBytes) then each tensor at its offset, 256-byte aligned
//   + slot_stride       slot 1 ...                                   (slot_stride is a multiple of the page size)
//
// No pointers live in shared memory: everything is segment + offset + length. Slots are page-aligned, so the
// whole ring can be page-locked (cudaHostRegister) and each tensor is aligned for vector loads and DMA.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace batchd::wire {

inline constexpr uint64_t kSegmentMagic = 0x4745535f44484342ull;  // "BCHD_SEG" little-endian
inline constexpr uint64_t kSlotMagic = 0x544f4c535f444843ull;     // "CHD_SLOT"
inline constexpr uint32_t kLayoutVersion = 1;
inline constexpr uint64_t kPageBytes = 4096;
inline constexpr uint64_t kTensorAlignment = 256;  // cudaMalloc's alignment; also a multiple of any cache line
inline constexpr uint64_t kSlotHeaderBytes = 256;

struct SegmentHeader {
  uint64_t magic;          // kSegmentMagic
  uint32_t version;        // kLayoutVersion
  uint32_t slot_count;
  uint64_t stream_id;
  uint64_t segment_bytes;
  uint64_t slot_offset;
  uint64_t slot_stride;
  int32_t daemon_pid;
  uint32_t reserved;
  double created_unix_seconds;
};
static_assert(sizeof(SegmentHeader) <= kPageBytes);

// Written by the worker after the slot's tensors; read by the client to check the slot holds the batch the
// BatchReady message announced.
struct SlotHeader {
  uint64_t magic;  // kSlotMagic
  uint64_t stream_id;
  uint64_t sequence;
  uint64_t epoch;
  uint64_t batch;
  uint32_t num_samples;
  uint32_t reserved;
};
static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes);

inline constexpr uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

struct SegmentLayout {
  std::vector<uint64_t> tensor_offsets;  // per tensor, from the start of a slot
  uint64_t slot_offset = 0;
  uint64_t slot_stride = 0;
  uint64_t segment_bytes = 0;
};

// itemsize * product(shape): the bytes of one sample of a tensor. nullopt when a dimension is negative or the product
// overflows 64 bits (a shape from a client or a spec is never trusted to fit; the wrapped value once let a label of
// num_classes = 2^62 plan as 0 bytes per sample, so its writer ran past its slot). Every size that is planned from
// a shape goes through here or compute_layout.
std::optional<uint64_t> checked_sample_bytes(uint64_t itemsize, const std::vector<int64_t>& shape);

// True when `count` items of `bytes` each, starting at `offset`, end at or before `limit`, without overflow.
bool fits_within(uint64_t offset, uint64_t bytes, uint64_t count, uint64_t limit);

// Computes the layout for `slot_count` slots of `batch_size` samples whose tensors take `sample_bytes[i]` bytes
// per sample. Returns nullopt if any size overflows 64 bits (callers bound batch_size and depth first).
std::optional<SegmentLayout> compute_layout(const std::vector<uint64_t>& sample_bytes, uint64_t batch_size,
                                            uint32_t slot_count);

}  // namespace batchd::wire
