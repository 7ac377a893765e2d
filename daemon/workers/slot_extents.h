// slot_extents.h — which bytes of a slot an attached worker's task may write, and the check of what it says it
// wrote (WorkerDone.written, issue 40).
//
// The daemon never reads a segment (docs/security.md): it cannot see what a worker wrote, only what the worker says
// it wrote. A task of rows [begin, end) of slot s may write, within that slot:
//   - the SlotHeader, bytes [0, kSlotHeaderBytes);
//   - of each tensor t (the stream's fields, then "index"), rows [begin, end): bytes
//     [t.offset + begin * t.sample_bytes, t.offset + end * t.sample_bytes).
// A whole-batch task (a collated batch of any structure: ExternalDataset.whole_batches) has every row of its one uint8
// field, and says how many of those bytes its batch took. A done without error must list at least one range, at most
// one per tensor and one for the header, each non-empty and inside one of the task's ranges; anything else is a
// worker that does not know its task (a bug in its writer, or a write that may have reached another task's rows):
// AttachedWorkers detaches it and redoes the task, as for a done that answers another task.
// It checks a claim, not the bytes: a worker that writes elsewhere and says otherwise is not caught (the daemon reads
// no segment; the trainer checks each batch's slot header, and a collated batch's signature: _own/batch_codec.py).
//
// Plain value type, built once per stream from its WorkerAttach.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "batchd.pb.h"

namespace batchd::daemon {

class SlotExtents final {
 public:
  SlotExtents() = default;
  explicit SlotExtents(const wire::WorkerAttach& attach);

  // "" if every range `done` lists lies in what the task of rows [begin, end) may write; else why not, naming the
  // first range outside (offsets from the slot's start) and the task's ranges.
  std::string check(const wire::WorkerDone& done, uint32_t begin, uint32_t end) const;

 private:
  struct Range {
    uint64_t first, last;  // [first, last)
  };
  std::vector<Range> allowed(uint32_t begin, uint32_t end) const;

  struct Tensor {
    std::string name;
    uint64_t offset = 0, sample_bytes = 0;
  };
  std::vector<Tensor> tensors_;
  uint64_t slot_bytes_ = 0;
};

}  // namespace batchd::daemon
