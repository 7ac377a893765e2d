// Share::apply_lag_policy (share.h, "Windows and the lag policy"): which subscribers are failed when the others wait
// on a production whose every slot is leased, and what they are told.
#include <algorithm>
#include <optional>
#include <vector>

#include "streams/share.h"

namespace batchd::daemon {

bool Share::waiting(const Subscriber& s) const {
  return s.state == State::kRunning && s.backlog.empty() && s.held.size() < window_ && s.delivered < s.total;
}

Share::Clock::duration Share::grace(const Subscriber& s) const {
  return std::min<Clock::duration>(std::max<Clock::duration>(timing_.stall, s.interval * 3), std::chrono::minutes(1));
}

void Share::apply_lag_policy() {
  auto someone_waits = [&] {
    return std::any_of(subscribers_.begin(), subscribers_.end(), [&](const auto& e) { return waiting(e.second); });
  };
  const Clock::time_point t = now();
  std::optional<Clock::time_point> next;  // when the first grace of a blocker still making progress ends
  while (production_.blocked_on_leases() && someone_waits()) {
    // First the running subscribers with batches to read that they do not take; then the holders of the oldest
    // leased batch (ended, or keeping it while reading on). Of each, those that released nothing for their grace.
    std::vector<Subscriber*> behind, oldest_holders;
    const auto oldest = production_.oldest_leased();
    for (auto& [id, s] : subscribers_) {
      if (s.state == State::kRunning && !waiting(s) && !(s.held.empty() && s.backlog.empty())) {
        behind.push_back(&s);
      } else if (oldest && s.state != State::kFailed && s.held.count(*oldest)) {
        oldest_holders.push_back(&s);
      }
    }
    std::vector<Subscriber*> stalled;
    for (const auto* tier : {&behind, &oldest_holders}) {
      for (Subscriber* s : *tier) {
        const Clock::time_point until = s->progress + grace(*s);
        if (until <= t) {
          stalled.push_back(s);
        } else if (!next || until < *next) {
          next = until;
        }
      }
      if (!stalled.empty()) break;
    }
    if (stalled.empty()) break;  // every one still makes progress: waited for
    for (Subscriber* s : stalled) fail(*s, lag_error(*s), /*revoke=*/true);
  }
  if (next && timing_.wake_at && production_.blocked_on_leases()) timing_.wake_at(*next);
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
                   std::to_string(behind) + " batches behind (" + holds + ") and released none for " +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now() - s.progress).count()) +
                   " ms while another subscriber waited and every one of the segment's " +
                   std::to_string(production_.opened().slot_count()) +
                   " slots was held (depth " + std::to_string(window_) + ", plus shares.max_lag = " + std::to_string(max_lag_) +
                   "): it was dropped so "
                   "that the others go on, and the batches it held may now be overwritten. Release batches sooner, "
                   "raise shares.stall_timeout_ms or shares.max_lag, join again (at the production's position), or "
                   "open a private stream");
}

}  // namespace batchd::daemon
