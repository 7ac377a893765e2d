// Share::apply_lag_policy (share.h, "Windows and the lag policy"): which subscribers are failed when the others wait
// on a production whose every slot is leased, and what they are told.
#include <algorithm>
#include <vector>

#include "streams/share.h"

namespace batchd::daemon {

bool Share::waiting(const Subscriber& s) const {
  return s.state == State::kRunning && s.backlog.empty() && s.held.size() < window_ && s.delivered < s.total;
}

void Share::apply_lag_policy() {
  auto someone_waits = [&] {
    return std::any_of(subscribers_.begin(), subscribers_.end(), [&](const auto& e) { return waiting(e.second); });
  };
  auto pins = [](const Subscriber& s) { return s.held.size() + s.backlog.size(); };
  while (production_.blocked_on_leases() && someone_waits()) {
    // Running subscribers with batches to read that they do not take: those holding or owed the most go first.
    size_t most = 0;
    for (const auto& [id, s] : subscribers_) {
      if (s.state == State::kRunning && !waiting(s)) most = std::max(most, pins(s));
    }
    std::vector<Subscriber*> blockers;
    for (auto& [id, s] : subscribers_) {
      if (most > 0 && s.state == State::kRunning && !waiting(s) && pins(s) == most) blockers.push_back(&s);
    }
    if (blockers.empty()) {  // none: the holders of the oldest leased batch (ended, or keeping it while reading on)
      const auto oldest = production_.oldest_leased();
      for (auto& [id, s] : subscribers_) {
        if (oldest && s.state != State::kFailed && s.held.count(*oldest)) blockers.push_back(&s);
      }
    }
    if (blockers.empty()) return;  // every leased slot has a holder: not reached
    for (Subscriber* s : blockers) fail(*s, lag_error(*s), /*revoke=*/true);
  }
}

Error Share::lag_error(const Subscriber& s) const {
  uint64_t oldest = production_.next_claim();
  if (!s.held.empty()) oldest = *s.held.begin();
  for (const auto& [key, ready] : s.backlog) oldest = std::min<uint64_t>(oldest, ready.sequence());
  const uint64_t behind = production_.next_claim() - oldest;
  const std::string holds =
      s.state == State::kEnded
          ? "it ended but still holds " + std::to_string(s.held.size()) + " batches"
          : "it holds " + std::to_string(s.held.size()) + " unreleased batches of its window of " +
                std::to_string(window_) + ", and " + std::to_string(s.backlog.size()) + " more wait for it";
  return Error(ErrorCode::kResourceExhausted,
               "share '" + name() + "' (stream " + std::to_string(production_.id()) + "): this subscriber fell " +
                   std::to_string(behind) + " batches behind (" + holds + ") while another subscriber waited and "
                   "every one of the segment's " + std::to_string(production_.opened().slot_count()) +
                   " slots was held (depth " + std::to_string(window_) + ", plus shares.max_lag = " + std::to_string(max_lag_) +
                   "): it was dropped so "
                   "that the others go on, and the batches it held may now be overwritten. Release batches sooner, "
                   "raise shares.max_lag, join again (at the production's position), or open a private stream");
}

}  // namespace batchd::daemon
