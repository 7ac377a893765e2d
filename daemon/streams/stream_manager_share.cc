// StreamManager's part in shared streams (stream_manager.h, share.h): a share opened or joined, a subscriber that
// leaves, and the timer that gives the lag policy another look when a subscriber's grace ends.
#include <spdlog/spdlog.h>

#include "streams/stream_manager.h"

namespace batchd::daemon {

Result<StreamManager::Opened> StreamManager::open_shared(const wire::OpenStream& req, const Peer& owner,
                                                         EventSink* sink) {
  auto planned = plan(req, plan_context(owner), datasets_);
  if (!planned.ok()) return planned.error();
  if (planned->dry_run) return Opened{planned->opened, {}};
  const auto key = std::make_pair(owner.uid, req.share());  // per uid: another uid's name is never seen
  auto found = shares_.find(key);
  if (found != shares_.end()) {
    Entry& entry = streams_.at(found->second);
    BATCHD_RETURN_IF_ERROR(entry.share->check_join(req, *planned, owner));
    return join_share(entry, req, owner, sink, /*is_creator=*/false);
  }
  auto segment = segments_.create(&*planned, owner.uid);
  if (!segment.ok()) return segment.error();
  Entry& entry = add_stream(std::move(planned).value(), std::move(segment).value(), owner, nullptr);
  Share::Timing timing;
  timing.stall = std::chrono::milliseconds(config_.shares.stall_timeout_ms);
  timing.now = [this] { return clock_ ? clock_() : Share::Clock::now(); };
  timing.wake_at = [this](Share::Clock::time_point at) { recheck_shares_at(at); };
  entry.share = std::make_unique<Share>(*entry.stream, req, owner.uid, config_.shares.max_lag,
                                        config_.shares.max_subscribers, std::move(timing));
  shares_[key] = entry.stream->id();
  auto opened = join_share(entry, req, owner, sink, /*is_creator=*/true);
  if (!opened.ok()) leave_share(streams_.find(entry.stream->id()), owner.connection_id);
  return opened;
}

Result<StreamManager::Opened> StreamManager::join_share(Entry& entry, const wire::OpenStream& req, const Peer& owner,
                                                        EventSink* sink, bool is_creator) {
  wire::UniqueFd client_fd;
  if (entry.stream->opened().strategy() == wire::FILE_DESCRIPTOR) {
    auto fd = entry.stream->client_fd(/*writable=*/false);  // every subscriber maps a share read-only
    if (!fd.ok()) return fd.error();
    client_fd = std::move(fd).value();
  }
  wire::StreamOpened reply = entry.share->join(owner, sink, req, is_creator);
  scheduler_.pump();
  return Opened{std::move(reply), std::move(client_fd)};
}

void StreamManager::after_opened(uint64_t stream_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || !it->second.share) return;
  it->second.share->deliver();  // what the others hold from the new subscriber's join point on
  scheduler_.pump();
}

void StreamManager::leave_share(std::map<uint64_t, Entry>::iterator it, uint64_t connection_id) {
  Share& share = *it->second.share;
  if (share.leave(connection_id)) {
    spdlog::info("share '{}' (stream {}): its last subscriber left", share.name(), it->first);
    shares_.erase(std::make_pair(share.creator_uid(), share.name()));
    erase(it);
    return;
  }
  share.deliver();  // what the leaver held may free slots; its remade batches are no longer made
  scheduler_.pump();
}

void StreamManager::recheck_shares_at(Share::Clock::time_point at) {
  if (io_ == nullptr || timers_cancelled_) return;  // unit tests call recheck_shares() themselves
  if (!lag_timer_) lag_timer_ = std::make_unique<boost::asio::steady_timer>(*io_);
  if (lag_timer_armed_ && lag_timer_->expiry() <= at) return;  // an earlier look covers it
  lag_timer_armed_ = true;
  lag_timer_->expires_at(at);
  lag_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed earlier (armed again by that call), or the daemon is stopping
    lag_timer_armed_ = false;
    recheck_shares();
  });
}

void StreamManager::recheck_shares() {
  for (auto& [id, entry] : streams_) {
    if (entry.share) entry.share->deliver();
  }
  scheduler_.pump();
}

}  // namespace batchd::daemon
