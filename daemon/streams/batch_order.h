// batch_order.h — which batch (epoch, batch index) each sequence number of a stream makes, in the order the workers
// make them and the stream hands them over.
//
// "Plain" batches follow the sampler: plain batch p is global batch start_batch + p of the stream, i.e. epoch
// first_epoch + (start_batch + p) / per_epoch, batch (start_batch + p) % per_epoch. A private stream is plain
// batches only (sequence s = plain batch s). A shared production (share.h) also carries remade runs: when a
// subscriber joins at batch j > 0 of epoch e, batches 0 .. j-1 of e are made again for it alone, placed after the
// production's last plain batch of epoch e and before the first of e + 1. Every subscriber's own order (the rest of
// e, its remade batches, then e + 1 for a late one) is thus a part of this order, so the oldest batch in the segment
// is always one that some subscriber reads next: the slots cannot all fill with batches nobody can read yet.
//
// Runs are inserted and dropped only at sequences not yet claimed, so a sequence already handed to a worker never
// changes meaning. Plain value type; not thread-safe (the daemon's io_context thread).
#pragma once

#include <cstdint>
#include <vector>

namespace batchd::daemon {

class BatchOrder final {
 public:
  struct Item {
    uint64_t epoch = 0;
    uint64_t batch = 0;  // index within the epoch
    bool remade = false;
    uint64_t plain = 0;  // plain batch index (for a remade batch: the plain batch it is placed before)
    uint64_t owner = 0;  // a remade batch's subscriber (share.h: its connection id)
  };

  BatchOrder(uint64_t first_epoch, uint64_t start_batch, uint64_t per_epoch, uint64_t plain_total)
      : first_epoch_(first_epoch), start_batch_(start_batch), per_epoch_(per_epoch), plain_total_(plain_total) {}

  // The batch of `sequence` (any value below total()).
  Item at(uint64_t sequence) const;
  uint64_t total() const { return plain_total_ + remade_; }
  uint64_t plain_total() const { return plain_total_; }
  // Plain batches among sequences [0, sequence).
  uint64_t plain_before(uint64_t sequence) const;
  // (epoch, batch) of plain batch `plain`, and the plain index of batch 0 of `epoch` (> first_epoch).
  Item plain_item(uint64_t plain) const;
  // The plain index of batch 0 of `epoch` (> first_epoch, or first_epoch when start_batch is 0).
  uint64_t epoch_begin(uint64_t epoch) const { return (epoch - first_epoch_) * per_epoch_ - start_batch_; }
  uint64_t per_epoch() const { return per_epoch_; }

  // The production makes plain batches [0, plain_total). The caller never lowers it below the plain batches
  // already claimed.
  void set_plain_total(uint64_t plain_total) { plain_total_ = plain_total; }
  // Remade batches 0 .. count-1 of `epoch` for `owner`, placed before plain batch epoch_begin(epoch + 1), after the
  // runs already placed there. The caller guarantees that position is not claimed yet.
  void insert_remakes(uint64_t epoch, uint64_t count, uint64_t owner);
  // Drops the part of `owner`'s runs at sequences >= `claimed` (not handed out yet); returns the batches dropped.
  uint64_t drop_remakes(uint64_t owner, uint64_t claimed);

 private:
  struct Run {
    uint64_t before_plain;  // placed before this plain batch
    uint64_t epoch;
    uint64_t count;  // batches 0 .. count-1 of epoch
    uint64_t owner;
  };
  uint64_t first_epoch_, start_batch_, per_epoch_, plain_total_;
  std::vector<Run> runs_;  // by before_plain, then insertion order
  uint64_t remade_ = 0;    // sum of runs_' counts
};

}  // namespace batchd::daemon
