#include "streams/slot_ring.h"

#include <algorithm>
#include <string>

namespace batchd::daemon {

std::optional<SlotRing::Claim> SlotRing::claim(uint64_t limit, const std::vector<uint32_t>& chunk_begins) {
  if (next_claim_ >= total_ || next_claim_ >= limit) return std::nullopt;
  for (uint32_t s = 0; s < slots_.size(); ++s) {
    if (slots_[s].state != State::kFree) continue;
    slots_[s] = {State::kWorking, next_claim_, 0, 0, {chunk_begins.begin(), chunk_begins.end()}, {}};
    return Claim{next_claim_++, s};
  }
  return std::nullopt;
}

bool SlotRing::can_claim(uint64_t limit) const {
  if (next_claim_ >= total_ || next_claim_ >= limit) return false;
  for (const auto& s : slots_) {
    if (s.state == State::kFree) return true;
  }
  return false;
}

void SlotRing::finish(uint64_t sequence, uint32_t slot, uint32_t begin) {
  if (slot >= slots_.size()) return;
  Slot& s = slots_[slot];
  if (s.state != State::kWorking || s.sequence != sequence || s.pending.erase(begin) == 0) return;
  if (s.pending.empty()) {
    s.state = State::kReady;
    s.ready_at = ++readied_;
  }
}

SlotRing::Ready SlotRing::lease(uint32_t s) {
  uint32_t skipped = 0;
  for (const auto& [begin, n] : slots_[s].skipped) skipped += n;
  slots_[s].state = State::kLeased;
  slots_[s].holders = 1;
  return {slots_[s].sequence, s, skipped};
}

std::vector<SlotRing::Ready> SlotRing::take_in_order(uint64_t limit) {
  std::vector<Ready> out;
  for (bool progress = true; progress && next_deliver_ < limit;) {
    progress = false;
    for (uint32_t s = 0; s < slots_.size() && next_deliver_ < limit; ++s) {
      if (slots_[s].state != State::kReady || slots_[s].sequence != next_deliver_) continue;
      out.push_back(lease(s));
      ++next_deliver_;
      progress = true;
    }
  }
  return out;
}

std::vector<SlotRing::Ready> SlotRing::take_completed(uint64_t limit) {
  std::vector<uint32_t> ready;
  for (uint32_t s = 0; s < slots_.size(); ++s) {
    if (slots_[s].state == State::kReady && slots_[s].sequence < limit) ready.push_back(s);
  }
  std::sort(ready.begin(), ready.end(),
            [&](uint32_t a, uint32_t b) { return slots_[a].ready_at < slots_[b].ready_at; });
  std::vector<Ready> out;
  for (uint32_t s : ready) {
    out.push_back(lease(s));
    delivered_ahead_.insert(slots_[s].sequence);
  }
  while (!delivered_ahead_.empty() && *delivered_ahead_.begin() == next_deliver_) {
    delivered_ahead_.erase(delivered_ahead_.begin());
    ++next_deliver_;
  }
  return out;
}

Status SlotRing::release(uint64_t sequence) {
  for (auto& slot : slots_) {
    if (slot.state == State::kLeased && slot.sequence == sequence) {
      if (--slot.holders == 0) slot.state = State::kFree;
      return ok_status();
    }
  }
  return Error(ErrorCode::kInvalidArgument, "no leased batch " + std::to_string(sequence) + " (released twice?)");
}

void SlotRing::set_holders(uint32_t slot, uint32_t holders) {
  if (slot >= slots_.size() || slots_[slot].state != State::kLeased) return;
  slots_[slot].holders = holders;
  if (holders == 0) slots_[slot].state = State::kFree;
}

void SlotRing::set_skipped(uint32_t slot, uint32_t begin, uint32_t skipped) {
  if (slot < slots_.size()) slots_[slot].skipped[begin] = skipped;
}

std::array<uint32_t, 4> SlotRing::counts() const {
  std::array<uint32_t, 4> counts{};
  for (const auto& s : slots_) ++counts[static_cast<int>(s.state)];
  return counts;
}

std::optional<uint64_t> SlotRing::oldest_leased() const {
  std::optional<uint64_t> oldest;
  for (const auto& s : slots_) {
    if (s.state == State::kLeased && (!oldest || s.sequence < *oldest)) oldest = s.sequence;
  }
  return oldest;
}

}  // namespace batchd::daemon
