// share.h — a shared production: one Stream whose batches are made once, into one segment, and announced to every
// subscriber that asked for the same data under one share name (OpenStream.share).
//
// Subscribers. Each is one connection's stream: it sees the production's stream id and segment (mapped read-only)
// and receives BatchReady for the batches meant for it, in the production's order (batch_order.h). A batch's slot
// is free once every subscriber it was announced to has released it.
//   - The creator reads what it asked for (epoch, start_batch, num_epochs).
//   - A later subscriber joins at the oldest batch from which every batch of the production is still in the
//     segment (being made, or delivered and not yet released by everyone), within the epoch of the claim front or
//     at an epoch start; if no batch is left, at the claim front. If that is batch j > 0 of epoch e, it reads batches j .. end of e from the production, then batches 0 .. j-1 of e made again for it
//     alone, then epochs e + 1 .. e + num_epochs - 1 in step with the others: each of its epochs holds every batch
//     exactly once (batches are deterministic in (seed, epoch, index), so remade ones equal what the others got).
//     Its StreamOpened says first_epoch = e, start_batch = 0, joined_at_batch = j.
//   - The production makes plain batches up to the furthest a subscriber still needs, and stops there.
// Windows and the lag policy (share_lag_policy.cc). A subscriber holds at most `window` (its depth) announced
// batches; batches made for it beyond that wait in its backlog. The segment has window + max_lag slots, so the
// production runs up to max_lag batches ahead of the slowest subscriber's window. The production is blocked when
// batches remain to be made, every slot is leased (none free, none being made) and a running subscriber has nothing
// to read: nothing changes until a holder releases a batch. The subscribers that keep the others waiting are the
// running ones that have batches to read and do not take them yet, and the holders of the oldest leased batch (an
// ended subscriber that keeps its last batches, or one that keeps an old batch while it reads on). One that still
// makes progress (it released a batch within its grace: Timing::stall, or 3 times its usual time between releases
// if that is longer, at most a minute) is waited for: a late joiner catching up, or a trainer slower than the
// others (the share then runs at its pace, at most max_lag batches behind the fastest). One that released nothing
// for its grace (stopped, suspended, a debugger breakpoint, ended and keeping its batches) is failed (StreamFailed
// naming the lag, leases_revoked), and the others go on; a timer (Timing::wake_at) looks again when the first grace
// ends. The rule counts slots, not backlogs, so it fires whatever the mix of ended subscribers, remade batches and
// leases kept out of order. A failed subscriber's leases are revoked at once: its backlog (it never saw those batches) and the batches
// it holds return to the production, which may overwrite them (its client returns the failure before any batch still
// queued for it, and a later Release of a revoked batch is ignored), so a stopped trainer never keeps the others waiting. The others
// go on. It is failed rather than split into a stream of its own: a split would silently double the decoding cost
// for it (the cost sharing exists to remove), needs a second segment the budget may not have, and hides a trainer
// that cannot keep up; the failure names the lag and the fixes (shares.max_lag, a private stream, or joining again).
// A production that fails (a bad sample under on_error = fail, shutdown) fails every subscriber without revoking:
// nothing is made any more, so the batches they hold stay intact until released.
//
// Names. A share name is its creator's uid's: the key is (uid, name), so two uids may each have a share "sweep-42"
// and only the creator's uid joins it (admins included: an admin reading another user's share opens its own). No
// answer to a subscriber tells it anything about another uid's shares.
//
// Not thread-safe: the daemon's io_context thread (StreamManager owns the shares).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "batchd.pb.h"
#include "streams/stream.h"

namespace batchd::daemon {

class EventSink;

class Share final {
 public:
  using Clock = std::chrono::steady_clock;
  struct Timing {
    std::chrono::milliseconds stall{2000};           // shares.stall_timeout_ms: the least grace (see above)
    std::function<Clock::time_point()> now;          // Clock::now when empty (tests: a clock of their own)
    std::function<void(Clock::time_point)> wake_at;  // call deliver() again at that time (empty: never)
  };
  // `production` (owned by the StreamManager) must outlive the share. `creator` is the request that created it.
  Share(Stream& production, wire::OpenStream creator, uint32_t creator_uid, uint32_t max_lag,
        uint32_t max_subscribers, Timing timing);

  const std::string& name() const { return creator_.share(); }
  uint32_t creator_uid() const { return creator_uid_; }

  // Whether `request` (planned as `plan`) from `peer` (of the creator's uid: StreamManager keys shares by uid) may
  // join: kInvalidArgument naming the first option that differs from the production's; kResourceExhausted at
  // shares.max_subscribers; kInvalidArgument if the connection already subscribes; kUnavailable if the production
  // failed.
  Status check_join(const wire::OpenStream& request, const StreamPlan& plan, const Peer& peer) const;
  // Adds a subscriber (check_join first). The creator joins first with is_creator.
  wire::StreamOpened join(const Peer& peer, EventSink* sink, const wire::OpenStream& request, bool is_creator);
  // Removes the subscriber on `connection_id` and releases everything it held; true if none is left (the
  // production ends: its owner closes it).
  bool leave(uint64_t connection_id);
  bool has(uint64_t connection_id) const { return subscribers_.count(connection_id) != 0; }
  // Subscribers whose connection is of `uid`.
  size_t subscribers_of(uint32_t uid) const;
  // Ends the lease of `sequence` for the subscriber on `connection_id` (ignored for a failed subscriber whose leases
  // were revoked: its client may still release what it held).
  Status release(uint64_t connection_id, uint64_t sequence);

  // Takes what the production finished, announces it within each subscriber's window, sends StreamEnd to those that
  // have read everything, applies the production's failure and the lag policy.
  void deliver();
  // Every running subscriber gets StreamFailed with `error` (the production failed: leases are not revoked).
  void fail_all(const Error& error);

  size_t subscribers() const { return subscribers_.size(); }
  // The production's StreamInfo with the share's fields and its subscribers.
  wire::StreamInfo info() const;

 private:
  enum class State { kRunning, kEnded, kFailed };
  // Where a batch comes in a subscriber's order: (epoch, 0 = from the production | 1 = remade for it, batch).
  using Key = std::tuple<uint64_t, int, uint64_t>;
  struct Subscriber {
    Peer peer;
    EventSink* sink = nullptr;
    uint64_t first_plain = 0, last_plain = 0;  // the plain batches it reads (batch_order.h)
    uint64_t total = 0;                        // batches it reads in all
    uint64_t delivered = 0;
    std::set<uint64_t> held;                   // announced, not released
    std::map<Key, wire::BatchReady> backlog;   // made for it, not announced yet (beyond its window, or early)
    State state = State::kRunning;
    uint64_t joined_epoch = 0;
    uint64_t first_batch = 0;                  // its first batch of joined_epoch (start_batch, or the join batch)
    bool late = false;                         // joined at first_batch > 0: its missed batches are remade
    Clock::time_point progress;                // when it joined or last released a batch
    Clock::duration interval{};                // its usual time between releases (a moving average)
  };
  // The key of the next batch `s` reads.
  Key next_key(const Subscriber& s) const;
  bool meant_for(const Subscriber& s, uint64_t connection_id, const BatchOrder::Item& item) const;
  // Where a new subscriber starts: the plain batch described above.
  uint64_t join_point() const;
  void unhold(uint64_t sequence);
  void flush(Subscriber& s);
  // Sends StreamFailed; its backlog is dropped and, with `revoke`, the batches it holds return to the production.
  void fail(Subscriber& s, const Error& error, bool revoke);
  // Whether `s` is running with nothing to read (it waits for the production).
  bool waiting(const Subscriber& s) const;
  void apply_lag_policy();
  // How long `s` may release nothing while it keeps the others waiting (see above).
  Clock::duration grace(const Subscriber& s) const;
  Clock::time_point now() const { return timing_.now ? timing_.now() : Clock::now(); }
  // The StreamFailed error of a subscriber that blocks the production.
  Error lag_error(const Subscriber& s) const;
  // Plain batches to make: up to the furthest a running subscriber needs.
  void update_plain_total();

  Stream& production_;
  wire::OpenStream creator_;
  uint32_t creator_uid_;
  uint32_t window_;
  uint32_t max_lag_;
  uint32_t max_subscribers_;
  Timing timing_;
  std::map<uint64_t, Subscriber> subscribers_;  // by connection id
  struct Taken {
    wire::BatchReady ready;
    uint32_t holders;
  };
  std::map<uint64_t, Taken> taken_;  // delivered batches some subscriber still holds or will read, by sequence
};

}  // namespace batchd::daemon
