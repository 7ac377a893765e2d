#include "streams/batch_order.h"

#include <algorithm>

namespace batchd::daemon {

BatchOrder::Item BatchOrder::plain_item(uint64_t plain) const {
  const uint64_t global = start_batch_ + plain;
  Item item;
  item.epoch = first_epoch_ + global / per_epoch_;
  item.batch = global % per_epoch_;
  item.plain = plain;
  return item;
}

BatchOrder::Item BatchOrder::at(uint64_t sequence) const {
  uint64_t offset = 0;  // remade batches before the run being looked at
  for (const Run& run : runs_) {
    const uint64_t start = run.before_plain + offset;
    if (sequence < start) break;
    if (sequence < start + run.count) {
      Item item;
      item.epoch = run.epoch;
      item.batch = sequence - start;
      item.remade = true;
      item.plain = run.before_plain;
      item.owner = run.owner;
      return item;
    }
    offset += run.count;
  }
  return plain_item(sequence - offset);
}

uint64_t BatchOrder::plain_before(uint64_t sequence) const {
  uint64_t offset = 0;
  for (const Run& run : runs_) {
    const uint64_t start = run.before_plain + offset;
    if (sequence <= start) break;
    if (sequence < start + run.count) return run.before_plain;
    offset += run.count;
  }
  return sequence - offset;
}

void BatchOrder::insert_remakes(uint64_t epoch, uint64_t count, uint64_t owner) {
  if (count == 0) return;
  const uint64_t before = epoch_begin(epoch + 1);
  auto pos = std::upper_bound(runs_.begin(), runs_.end(), before,
                              [](uint64_t b, const Run& run) { return b < run.before_plain; });
  runs_.insert(pos, Run{before, epoch, count, owner});
  remade_ += count;
}

uint64_t BatchOrder::drop_remakes(uint64_t owner, uint64_t claimed) {
  uint64_t dropped = 0, offset = 0;
  for (auto it = runs_.begin(); it != runs_.end();) {
    const uint64_t start = it->before_plain + offset;
    if (it->owner == owner && start + it->count > claimed) {
      const uint64_t keep = claimed > start ? claimed - start : 0;
      dropped += it->count - keep;
      it->count = keep;
    }
    offset += it->count;
    if (it->count == 0) {
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
  remade_ -= dropped;
  return dropped;
}

}  // namespace batchd::daemon
