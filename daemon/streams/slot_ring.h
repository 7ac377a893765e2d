// slot_ring.h — the slot state machine of one stream's segment, and the order in which its batches are made and
// delivered.
//
// Slot life cycle:  free --claim()--> working --finish() of its last chunk--> ready --take_in_order()--> leased
//                   --release()--> free.
// A claimed batch is made in chunks (consecutive samples [begin, end), filled by different workers at once): the
// slot is ready when every chunk it was claimed with has finished.
// Batches are numbered by `sequence` (0, 1, ... across all the stream's epochs, `total` in all). claim() hands out
// sequences in order, at most one per slot, so at most `slots` batches are working, ready or leased at once
// (back-pressure). take_in_order() hands ready batches over strictly in sequence order, even when workers finish
// out of order; take_completed() (a stream with ExternalDataset.completion_order, DataLoader's in_order=False) in
// the order they became ready. Either way each sequence is handed over once. A slot is reused only after its lease
// is released.
//
// Plain value type; not thread-safe (the daemon's io_context thread).
#pragma once

#include <array>
#include <map>
#include <set>
#include <cstdint>
#include <optional>
#include <vector>

#include "batchd/result.h"

namespace batchd::daemon {

class SlotRing final {
 public:
  enum class State { kFree = 0, kWorking = 1, kReady = 2, kLeased = 3 };
  struct Claim {
    uint64_t sequence;
    uint32_t slot;
  };
  struct Ready {
    uint64_t sequence;
    uint32_t slot;
    uint32_t skipped;  // samples of the batch replaced under on_error = skip
  };

  SlotRing(uint32_t slots, uint64_t total_batches) : slots_(slots), total_(total_batches) {}

  // The next sequence and a free slot for it, to be made in chunks starting at `chunk_begins`; nullopt if no slot
  // is free or every sequence below `limit` (and below total()) was claimed.
  std::optional<Claim> claim(uint64_t limit, const std::vector<uint32_t>& chunk_begins);
  // Whether claim(limit, ...) would succeed.
  bool can_claim(uint64_t limit) const;
  // The chunk at `begin` of the batch in `slot` is made (ignored unless that slot is working on `sequence` and the
  // chunk is pending); the slot is ready after its last chunk.
  void finish(uint64_t sequence, uint32_t slot, uint32_t begin);
  // Ready batches from next_deliver() on, in order, stopping before sequence `limit`; their slots become leased.
  std::vector<Ready> take_in_order(uint64_t limit);
  // Every ready batch below sequence `limit`, in the order they became ready; their slots become leased.
  std::vector<Ready> take_completed(uint64_t limit);
  // Ends one holder's lease of `sequence` (the slot is free after the last); kInvalidArgument if it is not leased
  // (released twice?).
  Status release(uint64_t sequence);
  // The leased batch in `slot` has `holders` holders (1 after take_in_order); 0 frees the slot at once.
  void set_holders(uint32_t slot, uint32_t holders);
  // Sequences [0, total) are to be made; total never goes below next_claim().
  void set_total(uint64_t total) { total_ = total < next_claim_ ? next_claim_ : total; }
  // Records how many samples of the chunk at `begin` of the batch in `slot` were replaced (their sum is shown with
  // its BatchReady).
  void set_skipped(uint32_t slot, uint32_t begin, uint32_t skipped);

  uint64_t next_claim() const { return next_claim_; }
  // The lowest sequence not handed over yet (with take_completed, some above it may have been).
  uint64_t next_deliver() const { return next_deliver_; }
  uint64_t delivered() const { return next_deliver_ + delivered_ahead_.size(); }  // batches handed over
  uint64_t total() const { return total_; }
  uint32_t size() const { return static_cast<uint32_t>(slots_.size()); }
  // Slots per state, indexed by State.
  std::array<uint32_t, 4> counts() const;
  // The oldest sequence in a leased slot; nullopt if no slot is leased.
  std::optional<uint64_t> oldest_leased() const;

 private:
  struct Slot {
    State state = State::kFree;
    uint64_t sequence = 0;
    uint32_t holders = 0;                    // leased: releases still to come
    uint64_t ready_at = 0;                   // ready: when (a count of finish() calls that made a slot ready)
    std::set<uint32_t> pending;              // begins of the chunks not finished yet
    std::map<uint32_t, uint32_t> skipped;    // begin -> samples of that chunk replaced under on_error = skip
  };
  std::vector<Slot> slots_;
  uint64_t total_;
  uint64_t next_claim_ = 0;
  uint64_t next_deliver_ = 0;
  std::set<uint64_t> delivered_ahead_;  // take_completed: sequences above next_deliver_ handed over already
  uint64_t readied_ = 0;
  Ready lease(uint32_t s);  // the ready batch in slot s, leased to one holder
};

}  // namespace batchd::daemon
