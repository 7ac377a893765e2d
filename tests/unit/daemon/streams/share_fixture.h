// share_fixture.h — ShareTest (tests/unit/daemon/streams/share_test.cc, share_lag_test.cc): Share (share.h) through
// the StreamManager with a fake pool: subscribers on their own connections, their events recorded, and the lag
// policy's clock the test's own (tick() moves it 10 ms; shares.stall_timeout_ms 50). fmnist_u8 over 10,000 samples
// in batches of 1,000: 10 batches per epoch.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "fake_workers.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {

class ShareTest : public ::testing::Test {
 protected:
  static StreamSettings config(uint32_t max_lag) {
    StreamSettings c;
    c.limits.max_shm_bytes = 1ull << 30;
    c.shares.max_lag = max_lag;
    c.shares.stall_timeout_ms = 50;
    return c;
  }
  void SetUp() override { reset(8); }
  void reset(uint32_t max_lag) {
    sut_.reset();
    config_ = config(max_lag);
    sut_.emplace(config_, datasets_, workers_, std::move(SegmentInstance::claim()).value());
    sut_->set_clock([this] { return now_; });
  }
  // 10 ms pass; the lag policy looks again (the daemon's timer would).
  void tick() {
    now_ += std::chrono::milliseconds(10);
    sut_->recheck_shares();
  }

  // Opens share `name` on connection `c` as `uid`; the production's stream id.
  Result<uint64_t> subscribe(uint64_t c, uint32_t num_epochs, uint32_t depth = 4, uint32_t uid = 1000,
                             const std::string& name = "lag", uint64_t seed = 7, bool admin = false) {
    wire::OpenStream r = testing::fmnist_u8_request(1000, depth);
    r.set_share(name);
    r.set_seed(seed);
    r.set_num_epochs(num_epochs);
    auto opened = sut_->open(r, Peer{c, static_cast<int32_t>(100 + c), uid, admin}, &sinks_[c]);
    if (!opened.ok()) return opened.error();
    id_ = opened->reply.stream_id();
    sut_->after_opened(id_);
    return id_;
  }
  // The workers finish every task, and the ones that follow, until none is busy (the production is out of slots).
  void run_workers() {
    for (bool busy = true; busy;) {
      busy = false;
      for (size_t w = 0; w < workers_.size(); ++w) {
        if (!workers_.busy(w)) continue;
        busy = true;
        Task t = workers_.take(w);
        sut_->on_task_done(w, testing::done_for(t), t);
      }
    }
  }
  // The sequences announced to connection `c` since the last call.
  std::vector<uint64_t> announced(uint64_t c) {
    std::vector<uint64_t> out;
    for (size_t& i = seen_[c]; i < sinks_[c].events.size(); ++i) {
      if (sinks_[c].events[i].has_batch_ready()) out.push_back(sinks_[c].events[i].batch_ready().sequence());
    }
    return out;
  }
  void release(uint64_t c, const std::vector<uint64_t>& sequences) {
    for (uint64_t s : sequences) EXPECT_TRUE(sut_->release(id_, s, c).ok()) << "connection " << c << " batch " << s;
  }
  std::optional<wire::StreamFailed> failure(uint64_t c) {
    for (const auto& e : sinks_[c].events) {
      if (e.has_stream_failed()) return e.stream_failed();
    }
    return std::nullopt;
  }
  bool ended(uint64_t c) {
    for (const auto& e : sinks_[c].events) {
      if (e.has_stream_end()) return true;
    }
    return false;
  }
  // The running subscriber on `c` reads (and releases) everything it gets, up to its end.
  std::vector<uint64_t> read_to_end(uint64_t c) {
    std::vector<uint64_t> read;
    for (int round = 0; round < 100 && !ended(c); ++round) {
      tick();
      run_workers();
      const auto got = announced(c);
      read.insert(read.end(), got.begin(), got.end());
      release(c, got);
    }
    const auto last = announced(c);  // announced with its StreamEnd by the last release
    read.insert(read.end(), last.begin(), last.end());
    return read;
  }
  wire::SubscriberInfo subscriber(uint64_t c) {
    wire::StatusReply status;
    sut_->fill_status(&status, StatusView::everything());
    for (const auto& stream : status.streams()) {
      for (const auto& sub : stream.subscribers()) {
        if (sub.client_pid() == static_cast<int32_t>(100 + c)) return sub;
      }
    }
    ADD_FAILURE() << "no subscriber on connection " << c;
    return {};
  }

  StreamSettings config_;
  DatasetRegistry datasets_ = testing::fmnist_registry();
  testing::FakeWorkers workers_{2};
  std::optional<StreamManager> sut_;
  std::map<uint64_t, testing::RecordingSink> sinks_;
  std::map<uint64_t, size_t> seen_;
  uint64_t id_ = 0;
  Share::Clock::time_point now_{};
};

inline std::vector<uint64_t> range(uint64_t begin, uint64_t end) {
  std::vector<uint64_t> out;
  for (uint64_t s = begin; s < end; ++s) out.push_back(s);
  return out;
}

}  // namespace batchd::daemon
