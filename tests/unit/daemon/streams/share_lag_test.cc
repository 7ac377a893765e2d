// The lag policy of a share (share.h, share_lag_policy.cc) with subscribers that keep taking batches: late joiners
// reading at the others' speed are waited for, never failed.
#include "share_fixture.h"

namespace batchd::daemon {
namespace {

// Issue 43, 9 (open since round two): three Loaders reading at the same speed, joined 0, 3 and 5 batches in (the
// issue's 0 / 20 / 40 with 10 batches an epoch and max_lag 2): the late ones read their remade batches while the
// first reads on, so the first waits for them at its epoch end. They all take a batch every tick: each reads its
// 2 epochs whole, and none is failed; on main the lag rule failed the late ones at the first one's epoch end.
TEST_F(ShareTest, LateJoinersReadingAtTheSameSpeedAreWaitedForNotFailed) {
  reset(2);  // depth 2 + max_lag 2 = 4 slots
  std::map<uint64_t, std::set<uint64_t>> held;
  std::map<uint64_t, size_t> read;
  auto step = [&] {  // every subscriber reads (releases) its oldest batch, as equal-speed trainers do
    tick();
    run_workers();
    for (auto& [c, h] : held) {
      for (uint64_t s : announced(c)) h.insert(s);
      if (h.empty()) continue;
      release(c, {h.extract(h.begin()).value()});
      ++read[c];
    }
  };
  ASSERT_TRUE(subscribe(1, 2, 2).ok());
  held[1];
  for (int i = 0; i < 3; ++i) step();
  ASSERT_TRUE(subscribe(2, 2, 2).ok());
  held[2];
  for (int i = 0; i < 2; ++i) step();
  ASSERT_TRUE(subscribe(3, 2, 2).ok());
  held[3];
  EXPECT_EQ(subscriber(2).joined_at_batch(), 3u);
  auto done = [&] {
    for (auto& [c, h] : held) {
      if (!ended(c) || !h.empty()) return false;
    }
    return true;
  };
  for (int i = 0; i < 200 && !done(); ++i) step();
  for (uint64_t c : {1, 2, 3}) {
    EXPECT_FALSE(failure(c).has_value()) << "connection " << c << ": " << failure(c)->error().message();
    EXPECT_TRUE(ended(c)) << "connection " << c << " read " << read[c];
    EXPECT_EQ(read[c], 20u) << "connection " << c;
  }
}

}  // namespace
}  // namespace batchd::daemon
