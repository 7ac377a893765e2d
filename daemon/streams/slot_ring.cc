#include "streams/slot_ring.h"

#include <string>

namespace batchd::daemon {

std::optional<SlotRing::Claim> SlotRing::claim(uint64_t limit) {
  if (next_claim_ >= total_ || next_claim_ >= limit) return std::nullopt;
  for (uint32_t s = 0; s < slots_.size(); ++s) {
    if (slots_[s].state != State::kFree) continue;
    slots_[s] = {State::kWorking, next_claim_, 0};
    return Claim{next_claim_++, s};
  }
  return std::nullopt;
}

void SlotRing::finish(uint64_t sequence, uint32_t slot) {
  if (slot < slots_.size() && slots_[slot].state == State::kWorking && slots_[slot].sequence == sequence) {
    slots_[slot].state = State::kReady;
  }
}

std::vector<SlotRing::Ready> SlotRing::take_in_order(uint64_t limit) {
  std::vector<Ready> out;
  for (bool progress = true; progress && next_deliver_ < limit;) {
    progress = false;
    for (uint32_t s = 0; s < slots_.size() && next_deliver_ < limit; ++s) {
      if (slots_[s].state != State::kReady || slots_[s].sequence != next_deliver_) continue;
      out.push_back({next_deliver_++, s, slots_[s].skipped});
      slots_[s].state = State::kLeased;
      progress = true;
    }
  }
  return out;
}

Status SlotRing::release(uint64_t sequence) {
  for (auto& slot : slots_) {
    if (slot.state == State::kLeased && slot.sequence == sequence) {
      slot.state = State::kFree;
      return ok_status();
    }
  }
  return Error(ErrorCode::kInvalidArgument, "no leased batch " + std::to_string(sequence) + " (released twice?)");
}

void SlotRing::set_skipped(uint32_t slot, uint32_t skipped) {
  if (slot < slots_.size()) slots_[slot].skipped = skipped;
}

std::array<uint32_t, 4> SlotRing::counts() const {
  std::array<uint32_t, 4> counts{};
  for (const auto& s : slots_) ++counts[static_cast<int>(s.state)];
  return counts;
}

}  // namespace batchd::daemon
