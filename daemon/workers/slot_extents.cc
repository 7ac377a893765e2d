#include "workers/slot_extents.h"

#include <fmt/format.h>

#include "batchd/wire/segment_layout.h"

namespace batchd::daemon {

SlotExtents::SlotExtents(const wire::WorkerAttach& attach) : slot_bytes_(attach.slot_stride()) {
  for (const auto& t : attach.tensors()) tensors_.push_back({t.name(), t.offset(), t.sample_bytes()});
}

std::vector<SlotExtents::Range> SlotExtents::allowed(uint32_t begin, uint32_t end) const {
  std::vector<Range> out{{0, wire::kSlotHeaderBytes}};
  for (const auto& t : tensors_) {
    out.push_back({t.offset + uint64_t{begin} * t.sample_bytes, t.offset + uint64_t{end} * t.sample_bytes});
  }
  return out;
}

std::string SlotExtents::check(const wire::WorkerDone& done, uint32_t begin, uint32_t end) const {
  if (done.written_size() == 0) return "it lists no bytes written (WorkerDone.written)";
  if (static_cast<size_t>(done.written_size()) > tensors_.size() + 1) {
    return fmt::format("it lists {} ranges written, over the {} its task has (the header and one per tensor)",
                       done.written_size(), tensors_.size() + 1);
  }
  const std::vector<Range> ranges = allowed(begin, end);
  for (const auto& e : done.written()) {
    // No overflow: offset and bytes are each checked against the slot before they are added.
    const bool inside_slot = e.offset() < slot_bytes_ && e.bytes() <= slot_bytes_ - e.offset();
    bool inside = false;
    for (const auto& r : ranges) {
      inside = inside || (inside_slot && e.bytes() > 0 && e.offset() >= r.first && e.offset() + e.bytes() <= r.last);
    }
    if (inside) continue;
    std::string mine = fmt::format("header [0, {})", wire::kSlotHeaderBytes);
    for (size_t i = 0; i < tensors_.size(); ++i) {
      mine += fmt::format(", {} [{}, {})", tensors_[i].name, ranges[i + 1].first, ranges[i + 1].last);
    }
    return fmt::format("it wrote bytes [{}, {}+{}) of its slot of {} bytes, outside its task's rows [{}, {}): {}",
                       e.offset(), e.offset(), e.bytes(), slot_bytes_, begin, end, mine);
  }
  return "";
}

}  // namespace batchd::daemon
