// Share (share.h) through the StreamManager with a fake pool (share_fixture.h): subscribers on their own
// connections that hold leases without releasing them (a stopped trainer), the lag policy when the others are
// blocked, and share names scoped per uid.
#include "share_fixture.h"

namespace batchd::daemon {
namespace {

// The finding: A stops (holds 0..3), later B stops (holds 4..7). A is failed first; on main it kept its 4 slots,
// and B then showed "running, held 4, lag 4" forever (4 + 4 + 4 = the 12 slots: its backlog could never reach
// max_lag) while C waited. Now A's leases are revoked and B is failed in turn: C reads all 20 batches.
TEST_F(ShareTest, TwoSubscribersThatStopHoldingLeasesDoNotStallTheThird) {
  for (uint64_t c : {1, 2, 3}) ASSERT_TRUE(subscribe(c, 2).ok());  // A, B, C: 2 epochs, 20 batches each
  run_workers();  // depth 4 + max_lag 8 = 12 slots: batches 0..11
  for (uint64_t c : {1, 2, 3}) EXPECT_EQ(announced(c), range(0, 4));
  release(2, range(0, 4));  // A stops here, holding 0..3
  release(3, range(0, 4));
  run_workers();
  EXPECT_EQ(announced(2), range(4, 8));  // B stops here, holding 4..7
  EXPECT_EQ(announced(3), range(4, 8));
  release(3, range(4, 8));
  EXPECT_EQ(announced(3), range(8, 12));
  EXPECT_EQ(subscriber(1).state(), "running") << "every slot is held, but C still has batches to read";
  release(3, range(8, 12));  // C waits: blocked by A (12 slots held or owed), then by B
  const std::vector<uint64_t> c_read = read_to_end(3);
  EXPECT_TRUE(ended(3)) << "C read " << c_read.size() << " more batches, then waited for ever";
  EXPECT_EQ(c_read, range(12, 20));
  for (uint64_t c : {1, 2}) {
    const auto failed = failure(c);
    ASSERT_TRUE(failed.has_value()) << "connection " << c;
    EXPECT_TRUE(failed->leases_revoked());
    EXPECT_NE(failed->error().message().find("batches behind"), std::string::npos) << failed->error().message();
    EXPECT_EQ(subscriber(c).state(), "failed");
    EXPECT_EQ(subscriber(c).held(), 0u) << "its slots went back to the production";
  }
  EXPECT_NE(failure(1)->error().message().find("fell 12 batches behind (it holds 4 unreleased batches of its "
                                               "window of 4, and 8 more wait for it)"),
            std::string::npos)
      << failure(1)->error().message();
  release(1, range(0, 4));  // the stopped trainers go on: releasing what was revoked is not an error
  release(2, range(4, 8));
}

// The arithmetic case: E ended holding its last batches 6..9; S stopped holding 10..13 with 14..17 owed: "held 4,
// lag 4", a backlog that never reaches max_lag (8) because E's 4 slots count too. W waits for 18. S is failed.
TEST_F(ShareTest, TheLagRuleFiresWhenASubscriberBlocksWhateverItsBacklog) {
  ASSERT_TRUE(subscribe(1, 1).ok());  // E: the creator, one epoch
  ASSERT_TRUE(subscribe(2, 2).ok());  // S
  ASSERT_TRUE(subscribe(3, 2).ok());  // W
  run_workers();
  for (uint64_t c : {1, 2, 3}) release(c, announced(c));  // 0..3
  run_workers();
  for (uint64_t c : {1, 2, 3}) EXPECT_EQ(announced(c), range(4, 8));
  for (uint64_t c : {1, 2, 3}) release(c, {4, 5});
  EXPECT_EQ(announced(1), range(8, 10));
  EXPECT_TRUE(ended(1)) << "E read its epoch; it keeps 6..9";
  run_workers();
  for (uint64_t c : {2, 3}) {
    EXPECT_EQ(announced(c), range(8, 10));
    release(c, range(6, 10));
    EXPECT_EQ(announced(c), range(10, 14));
  }
  run_workers();
  release(3, range(10, 14));
  EXPECT_EQ(announced(3), range(14, 18));
  release(3, range(14, 18));  // W waits for 18: every slot is E's or S's
  EXPECT_EQ(read_to_end(3), range(18, 20)) << "W waited for ever behind S (held 4, lag 4) and E";
  const auto failed = failure(2);
  ASSERT_TRUE(failed.has_value());
  EXPECT_TRUE(failed->leases_revoked());
  EXPECT_NE(failed->error().message().find("fell 8 batches behind (it holds 4 unreleased batches of its window of "
                                           "4, and 4 more wait for it)"),
            std::string::npos)
      << failed->error().message();
  EXPECT_FALSE(failure(1).has_value()) << "E blocked less than S: S went first, and that was enough";
  EXPECT_EQ(subscriber(1).held(), 4u);
}

// depth 2 + max_lag 1 = 3 slots. E ended keeping its last two batches (8, 9); W holds 10 and waits for 11: no
// running subscriber has batches to read, so the holder of the oldest leased batch (E) is the one failed.
TEST_F(ShareTest, AnEndedSubscriberKeepingItsLastBatchesIsFailedWhenItBlocksTheOthers) {
  reset(1);
  ASSERT_TRUE(subscribe(1, 1, 2).ok());  // E
  ASSERT_TRUE(subscribe(2, 2, 2).ok());  // W
  std::set<uint64_t> e_held, w_held;
  for (int round = 0; round < 40 && !ended(1); ++round) {  // in step: each releases its oldest batch, E first
    tick();
    run_workers();
    for (uint64_t s : announced(1)) e_held.insert(s);
    for (uint64_t s : announced(2)) w_held.insert(s);
    if (!e_held.empty() && *e_held.begin() < 8) release(1, {e_held.extract(e_held.begin()).value()});
    if (!w_held.empty()) release(2, {w_held.extract(w_held.begin()).value()});
  }
  ASSERT_TRUE(ended(1));
  ASSERT_FALSE(failure(1).has_value()) << failure(1)->error().message();
  bool got_11 = false;
  for (int round = 0; round < 20 && !got_11; ++round) {  // W keeps 10 and reads on
    tick();
    run_workers();
    for (uint64_t s : announced(2)) {
      got_11 |= s == 11;
      w_held.insert(s);
    }
    for (auto it = w_held.begin(); it != w_held.end();) {
      if (*it == 10) {
        ++it;
        continue;
      }
      release(2, {*it});
      it = w_held.erase(it);
    }
  }
  EXPECT_TRUE(got_11) << "W, keeping 10, waited for ever for 11 behind E's 8 and 9";
  const auto failed = failure(1);
  ASSERT_TRUE(failed.has_value());
  EXPECT_TRUE(failed->leases_revoked());
  EXPECT_NE(failed->error().message().find("it ended but still holds 2 batches"), std::string::npos)
      << failed->error().message();
  EXPECT_FALSE(failure(2).has_value());
}

// Item 9: a share name is its uid's. Another uid (or an admin) asking for the same name gets a production of its
// own, with any options, and learns nothing about the first one; the same uid joins its own.
TEST_F(ShareTest, ShareNamesArePerUid) {
  auto mine = subscribe(1, 1, 4, 1000, "sweep", 7);
  ASSERT_TRUE(mine.ok()) << mine.error().message();
  auto theirs = subscribe(2, 1, 4, 2000, "sweep", 8);  // other options: no "reads seed 7", no "uid 1000"
  ASSERT_TRUE(theirs.ok()) << theirs.error().message();
  EXPECT_NE(*theirs, *mine);
  auto admins = subscribe(3, 1, 4, 0, "sweep", 7, /*admin=*/true);
  ASSERT_TRUE(admins.ok()) << admins.error().message();
  EXPECT_NE(*admins, *mine) << "admins, too, join only their own uid's shares";
  auto again = subscribe(4, 1, 4, 1000, "sweep", 7);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(*again, *mine);
  auto differs = subscribe(5, 1, 4, 2000, "sweep", 7);
  ASSERT_FALSE(differs.ok());
  EXPECT_NE(differs.error().message().find("share 'sweep' reads seed 8"), std::string::npos)
      << differs.error().message();
  wire::StatusReply status;
  sut_->fill_status(&status, StatusView::own(2000));
  ASSERT_EQ(status.streams_size(), 1);
  EXPECT_EQ(status.streams(0).subscribers_size(), 1);
  EXPECT_EQ(status.streams(0).subscribers(0).uid(), 2000u);
  EXPECT_EQ(status.streams_of_others(), 2u);
  EXPECT_EQ(status.shared_streams(), 3u);
}

}  // namespace
}  // namespace batchd::daemon
