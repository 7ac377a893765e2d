// Shared streams (StreamOptions::share) against a real daemon: one production, many subscribers; late joins; a
// subscriber killed or stopped; the mismatch errors; names per uid. Fashion-MNIST, 2 workers.
#include <algorithm>

#include "other_user.h"
#include "share_fixture.h"

namespace batchd::testing {
namespace {

class ShareTest : public SharedDaemonTest {};

TEST_F(ShareTest, ThreeSubscribersReadOneProductionByteForByte) {
  Reader readers[3];
  for (auto& r : readers) r.open(daemon().socket_path(), share_options("three"));
  // The later two joined while nothing was released yet: at the production's start, nothing remade.
  for (size_t i = 1; i < 3; ++i) EXPECT_EQ(readers[i].stream->info().joined_at_batch, 0u);
  for (bool more = true; more;) {
    more = false;
    for (auto& r : readers) more |= r.step();
  }
  const DaemonStatus st = daemon_status(daemon().socket_path());
  const StreamStatus* share = find_share(st, "three");
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->subscribers.size(), 3u);
  EXPECT_EQ(share->batches_made, 2 * kPerEpoch) << "the workers made each batch once";
  EXPECT_EQ(share->batches_remade, 0u);
  EXPECT_EQ(st.segments.size(), 1u) << "one segment for the three";
  for (const auto& sub : share->subscribers) EXPECT_EQ(sub.batches_delivered, 2 * kPerEpoch);
  EXPECT_EQ(st.shared_streams, 1u);
  EXPECT_EQ(st.share_subscribers, 3u);
  const auto streams = batchctl("--socket " + daemon().socket_path() + " streams");
  EXPECT_NE(streams.out.find("share 'three': 3 subscriber(s), 60 batches made (0 remade"), std::string::npos)
      << streams.out;
  const auto shm = batchctl("--socket " + daemon().socket_path() + " shm");
  EXPECT_NE(shm.out.find("shared as 'three' by 3 stream(s): counted once"), std::string::npos) << shm.out;
  for (auto& r : readers) {
    EXPECT_EQ(r.digests.size(), 2 * kPerEpoch);
    EXPECT_EQ(r.digests, readers[0].digests) << "byte-identical batches per (epoch, batch)";
    expect_every_index_once(r, 0);
    expect_every_index_once(r, 1);
  }
}

TEST_F(ShareTest, ALateSubscriberReadsTheRestThenItsMissedBatchesThenInStep) {
  // The late subscriber has its missed batches to read on top of the others': with every trainer reading as fast as
  // the production, the others wait for it, up to shares.max_lag batches (share.h); 48 covers what it misses here.
  auto daemon = start_daemon("", 2, {"--config", write_test_config("late", R"(
[shares]
max_lag = 48
[datasets.fashion-mnist]
format = "idx"
images = ")" FMNIST_DIR R"(/train-images-idx3-ubyte.gz"
labels = ")" FMNIST_DIR R"(/train-labels-idx1-ubyte.gz"
)")});
  StreamOptions first_options = share_options("late", 3), late_options = share_options("late", 2);
  first_options.pipeline = late_options.pipeline = "fmnist_u8";
  first_options.batch_size = late_options.batch_size = 500;  // 120 batches per epoch
  constexpr uint64_t kPerEpoch = 120;
  Reader first, late;
  first.open(daemon.socket_path(), first_options);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(first.step());  // released as read: their slots are reused
  late.open(daemon.socket_path(), late_options);
  const uint64_t j = late.stream->info().joined_at_batch;
  EXPECT_EQ(late.stream->info().first_epoch, 0u);
  EXPECT_GT(j, 0u);
  EXPECT_LT(j, kPerEpoch);
  EXPECT_EQ(late.stream->info().total_batches, 2 * kPerEpoch) << "two whole epochs";
  while (late.step() | first.step()) {  // both as fast as they can
  }
  ASSERT_EQ(late.order.size(), 2 * kPerEpoch);
  ASSERT_EQ(first.order.size(), 3 * kPerEpoch);
  for (uint64_t k = 0; k < kPerEpoch; ++k) {  // epoch 0: j .. end, then 0 .. j-1
    EXPECT_EQ(late.order[k], std::make_pair(uint64_t{0}, (j + k) % kPerEpoch)) << "position " << k;
    EXPECT_EQ(late.order[kPerEpoch + k], std::make_pair(uint64_t{1}, k)) << "in step from its second epoch";
  }
  for (const auto& [key, d] : late.digests) EXPECT_EQ(d, first.digests.at(key)) << key.first << "/" << key.second;
  expect_every_index_once(late, 0);
  expect_every_index_once(late, 1);
  const DaemonStatus st = daemon_status(daemon.socket_path());
  const StreamStatus* share = find_share(st, "late");
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->batches_remade, j);
  EXPECT_EQ(share->batches_made, 3 * kPerEpoch + j);
}

TEST_F(ShareTest, AJoinThatDiffersIsRefusedNamingTheOption) {
  Reader a;
  a.open(daemon().socket_path(), share_options("strict"));
  auto c = Client::connect(daemon().socket_path());
  ASSERT_TRUE(c.ok());
  auto other = share_options("strict");
  other.seed = 8;
  auto s = c->open_stream(other);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message().find("share 'strict' reads seed 7; this stream asks for seed 8"), std::string::npos)
      << s.error().message();
  other = share_options("strict");
  other.vision.crop_size = 0;
  other.pipeline = "fmnist_u8";
  s = c->open_stream(other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("pipeline 'fmnist'"), std::string::npos) << s.error().message();
  other = share_options("strict");
  other.writable = true;
  s = c->open_stream(other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("writable = false"), std::string::npos) << s.error().message();
  other = share_options("strict");
  other.epoch = 5;  // where it joins: allowed to differ
  other.num_epochs = 1;
  EXPECT_TRUE(c->open_stream(other).ok());
  other.share = "bad name!";
  s = c->open_stream(other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("share name"), std::string::npos) << s.error().message();
}

// Issue 23, item 9: share names are per uid. On main, trying a name that root uses answered uid nobody "was created
// by uid 0" (and a free name was taken for everyone). Now nobody gets a share of its own under that name, whatever
// its options, and its answers and status show nothing of root's; root's share keeps its one subscriber.
TEST_F(ShareTest, AnotherUidProbingANameInUseLearnsNothingAndGetsItsOwnShare) {
  SKIP_UNLESS_ROOT();
  auto daemon = start_daemon();
  open_socket_to_everyone(daemon.socket_path());
  Reader a;
  a.open(daemon.socket_path(), share_options("mine"));
  ASSERT_TRUE(a.step());
  const std::string socket = daemon.socket_path();
  UserProcess nobody(Credentials{}, [&](int out, int in) {
    auto c = Client::connect(socket);
    if (!c.ok()) return UserProcess::send(out, "connect: " + c.error().message() + "\n");
    auto options = share_options("mine");
    options.seed = 8;  // not root's: a join would be refused naming root's seed
    auto s = c->open_stream(options);
    if (!s.ok()) return UserProcess::send(out, "refused: " + s.error().message() + "\n");
    auto b = s->next();
    UserProcess::send(out, "opened " + std::to_string(s->info().id) + (b.ok() && *b ? " read" : " no batch") +
                               " joined_at " + std::to_string(s->info().joined_at_batch) + "\n");
    auto admin = Admin::connect(socket);
    auto st = admin.ok() ? admin->status() : Result<DaemonStatus>(admin.error());
    if (!st.ok()) return UserProcess::send(out, "status: " + st.error().message() + "\n");
    std::string seen = "streams " + std::to_string(st->streams.size()) + " others " +
                       std::to_string(st->streams_of_others);
    for (const auto& stream : st->streams) {
      for (const auto& sub : stream.subscribers) seen += " uid " + std::to_string(sub.uid);
    }
    UserProcess::send(out, seen + "\n");
    UserProcess::wait_for_release(in);  // its share lives while root looks
  });
  const std::string opened = nobody.read_line();
  EXPECT_EQ(opened.rfind("opened ", 0), 0u) << opened;
  EXPECT_NE(opened, "opened " + std::to_string(a.stream->info().id) + " read joined_at 0") << "root's production";
  EXPECT_NE(opened.find(" read joined_at 0"), std::string::npos) << "a production of its own, from its start";
  EXPECT_EQ(nobody.read_line(), "streams 1 others 1 uid " + std::to_string(kNobody));
  const DaemonStatus st = daemon_status(socket);  // root's view: two productions named 'mine', one subscriber each
  std::vector<uint32_t> uids;
  for (const auto& stream : st.streams) {
    if (stream.share != "mine") continue;
    ASSERT_EQ(stream.subscribers.size(), 1u);
    uids.push_back(stream.subscribers[0].uid);
  }
  std::sort(uids.begin(), uids.end());
  EXPECT_EQ(uids, (std::vector<uint32_t>{0, kNobody}));
  EXPECT_EQ(nobody.finish(), "");
}

}  // namespace
}  // namespace batchd::testing
