#include "streams/share.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "batchd/wire/convert.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {

namespace {

const char* state_name(int state) { return state == 0 ? "running" : state == 1 ? "ended" : "failed"; }

}  // namespace

Share::Share(Stream& production, wire::OpenStream creator, uint32_t creator_uid, uint32_t max_lag,
             uint32_t max_subscribers, Timing timing)
    : production_(production),
      creator_(std::move(creator)),
      creator_uid_(creator_uid),
      window_(production.opened().window() ? production.opened().window() : production.opened().slot_count()),
      max_lag_(max_lag),
      max_subscribers_(max_subscribers),
      timing_(std::move(timing)) {}

size_t Share::subscribers_of(uint32_t uid) const {
  size_t n = 0;
  for (const auto& [connection, s] : subscribers_) n += s.peer.uid == uid;
  return n;
}

wire::StreamOpened Share::join(const Peer& peer, EventSink* sink, const wire::OpenStream& req, bool is_creator) {
  const BatchOrder& order = production_.order();
  wire::StreamOpened opened = production_.opened();
  Subscriber s;
  s.peer = peer;
  s.sink = sink;
  s.progress = now();
  if (is_creator) {
    s.total = wire::total_batches(opened);
    s.last_plain = s.total - 1;
    s.joined_epoch = opened.first_epoch();
    s.first_batch = opened.start_batch();
  } else {
    const uint64_t epochs = std::max<uint32_t>(1, req.num_epochs());
    const uint64_t front = join_point();
    const BatchOrder::Item at = order.plain_item(front);
    s.first_plain = front;
    s.last_plain = order.epoch_begin(at.epoch + epochs) - 1;
    s.total = epochs * order.per_epoch();
    s.joined_epoch = at.epoch;
    s.first_batch = at.batch;
    s.late = at.batch > 0;
    production_.insert_remakes(at.epoch, at.batch, peer.connection_id);
    opened.set_first_epoch(at.epoch);
    opened.set_num_epochs(static_cast<uint32_t>(epochs));
    opened.set_start_batch(0);
    opened.set_joined_at_batch(at.batch);
  }
  spdlog::info("share '{}' (stream {}): subscriber pid={} uid={} joined at epoch {} batch {} ({} batches, {} remade "
               "for it)", name(), production_.id(), peer.pid, peer.uid, s.joined_epoch,
               s.first_batch, s.total, s.late ? s.first_batch : 0);
  // Batches already delivered to the others from the join point on: it holds them too, in order.
  for (auto& [sequence, taken] : taken_) {
    const BatchOrder::Item item = order.at(sequence);
    if (item.remade || item.plain < s.first_plain) continue;
    s.backlog[Key{item.epoch, 0, item.batch}] = taken.ready;
    production_.set_holders(taken.ready.slot(), ++taken.holders);
  }
  const uint64_t connection_id = peer.connection_id;
  subscribers_[connection_id] = std::move(s);
  update_plain_total();
  return opened;  // its batches are announced by the next deliver(), after this reply is sent

}

uint64_t Share::join_point() const {
  const BatchOrder& order = production_.order();
  const uint64_t front = order.plain_before(production_.next_claim());
  // Walk back over the sequences still in the segment: claimed and not delivered, or delivered and held.
  uint64_t oldest = front;
  for (uint64_t sequence = production_.next_claim(); sequence-- > 0;) {
    const BatchOrder::Item item = order.at(sequence);
    if (item.remade) continue;  // another subscriber's: not needed
    if (sequence < production_.next_deliver() && taken_.count(sequence) == 0) break;
    oldest = item.plain;
  }
  // Remade batches go before the next epoch's first plain batch, which must not be claimed yet: start in the claim
  // front's epoch, or at an epoch start.
  const uint64_t front_epoch = order.plain_item(front).epoch;
  for (uint64_t p = oldest; p < front; ++p) {
    const BatchOrder::Item item = order.plain_item(p);
    if (item.epoch == front_epoch || item.batch == 0) return p;
  }
  return front;
}

void Share::unhold(uint64_t sequence) {
  auto it = taken_.find(sequence);
  if (it != taken_.end() && --it->second.holders == 0) taken_.erase(it);
  (void)production_.release(sequence);
}

bool Share::leave(uint64_t connection_id) {
  auto it = subscribers_.find(connection_id);
  if (it == subscribers_.end()) return subscribers_.empty();
  Subscriber& s = it->second;
  for (uint64_t sequence : s.held) unhold(sequence);
  for (const auto& [key, ready] : s.backlog) unhold(ready.sequence());
  spdlog::info("share '{}' (stream {}): subscriber pid={} left after {} of {} batches", name(), production_.id(),
               s.peer.pid, s.delivered, s.total);
  subscribers_.erase(it);
  production_.drop_remakes(connection_id);
  update_plain_total();
  return subscribers_.empty();
}

Status Share::release(uint64_t connection_id, uint64_t sequence) {
  auto it = subscribers_.find(connection_id);
  if (it != subscribers_.end() && it->second.state == State::kFailed && it->second.held.count(sequence) == 0) {
    return ok_status();  // revoked when it was failed (its client may release what it still had)
  }
  if (it == subscribers_.end() || it->second.held.erase(sequence) == 0) {
    return Error(ErrorCode::kInvalidArgument, "stream " + std::to_string(production_.id()) + ": no leased batch " +
                                                  std::to_string(sequence) + " (released twice?)");
  }
  unhold(sequence);
  Subscriber& s = it->second;
  const Clock::time_point t = now();
  const Clock::duration since = std::min<Clock::duration>(t - s.progress, std::chrono::minutes(1));
  s.interval = s.interval == Clock::duration{} ? since : (s.interval * 3 + since) / 4;
  s.progress = t;
  return ok_status();
}

bool Share::meant_for(const Subscriber& s, uint64_t connection_id, const BatchOrder::Item& item) const {
  if (s.state != State::kRunning) return false;
  if (item.remade) return item.owner == connection_id;
  return item.plain >= s.first_plain && item.plain <= s.last_plain;
}

void Share::deliver() {
  for (const auto& ready : production_.take_deliverable()) {
    const BatchOrder::Item item = production_.order().at(ready.sequence());
    uint32_t holders = 0;
    for (auto& [connection_id, s] : subscribers_) {
      if (!meant_for(s, connection_id, item)) continue;
      s.backlog[Key{item.epoch, item.remade ? 1 : 0, item.batch}] = ready;
      ++holders;
    }
    production_.set_holders(ready.slot(), holders);
    if (holders > 0) taken_[ready.sequence()] = Taken{ready, holders};
  }
  for (auto& [connection_id, s] : subscribers_) flush(s);
  if (auto error = production_.due_failure()) {
    fail_all(*error);
    production_.mark_failed();
    return;
  }
  apply_lag_policy();
}

Share::Key Share::next_key(const Subscriber& s) const {
  const uint64_t n = production_.order().per_epoch();
  const uint64_t k = s.delivered;
  if (s.late && k < n) {  // its first epoch: j .. n-1 from the production, then 0 .. j-1 remade
    const uint64_t shared = n - s.first_batch;
    return k < shared ? Key{s.joined_epoch, 0, s.first_batch + k} : Key{s.joined_epoch, 1, k - shared};
  }
  const uint64_t global = (s.late ? 0 : s.first_batch) + k;
  return Key{s.joined_epoch + global / n, 0, global % n};
}

void Share::flush(Subscriber& s) {
  while (s.state == State::kRunning && !s.backlog.empty() && s.held.size() < window_ &&
         s.backlog.begin()->first == next_key(s)) {
    wire::Reply event;
    *event.mutable_batch_ready() = std::move(s.backlog.begin()->second);
    s.backlog.erase(s.backlog.begin());
    s.held.insert(event.batch_ready().sequence());
    ++s.delivered;
    s.sink->send_event(event);
  }
  if (s.state == State::kRunning && s.delivered == s.total) {
    s.state = State::kEnded;
    wire::Reply event;
    event.mutable_stream_end()->set_stream_id(production_.id());
    s.sink->send_event(event);
  }
}

void Share::fail(Subscriber& s, const Error& error, bool revoke) {
  if (s.state == State::kFailed) return;
  for (const auto& [key, ready] : s.backlog) unhold(ready.sequence());  // never announced to it
  s.backlog.clear();
  if (revoke) {
    for (uint64_t sequence : s.held) unhold(sequence);
    s.held.clear();
  }
  const bool was_running = s.state == State::kRunning;
  s.state = State::kFailed;
  spdlog::warn("share '{}' (stream {}): subscriber pid={} failed{}: {}", name(), production_.id(), s.peer.pid,
               revoke ? " (its leases revoked)" : "", error.message());
  wire::Reply event;
  event.mutable_stream_failed()->set_stream_id(production_.id());
  *event.mutable_stream_failed()->mutable_error() = wire::to_wire(error);
  event.mutable_stream_failed()->set_leases_revoked(revoke);
  s.sink->send_event(event);
  if (!was_running) return;  // an ended subscriber's remade batches and plain range are done already
  production_.drop_remakes(s.peer.connection_id);
  update_plain_total();
}

void Share::fail_all(const Error& error) {
  for (auto& [connection_id, s] : subscribers_) {
    if (s.state == State::kRunning) fail(s, error, /*revoke=*/false);
  }
}

void Share::update_plain_total() {
  uint64_t needed = 0;
  for (const auto& [connection_id, s] : subscribers_) {
    if (s.state == State::kRunning) needed = std::max(needed, s.last_plain + 1);
  }
  production_.set_plain_total(needed);
}

wire::StreamInfo Share::info() const {
  wire::StreamInfo info = production_.info();
  info.set_share(name());
  info.set_max_lag(max_lag_);
  for (const auto& [connection_id, s] : subscribers_) {
    auto* sub = info.add_subscribers();
    sub->set_client_pid(s.peer.pid);
    sub->set_uid(s.peer.uid);
    sub->set_batches_delivered(s.delivered);
    sub->set_batches_total(s.total);
    sub->set_held(static_cast<uint32_t>(s.held.size()));
    sub->set_lag(static_cast<uint32_t>(s.backlog.size()));
    sub->set_state(state_name(static_cast<int>(s.state)));
    sub->set_joined_epoch(s.joined_epoch);
    sub->set_joined_at_batch(s.late ? s.first_batch : 0);
  }
  return info;
}

}  // namespace batchd::daemon
