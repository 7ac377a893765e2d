// Shared streams (StreamOptions::share) against a real daemon: one production, many subscribers; late joins; a
// subscriber killed or stopped; the mismatch and permission errors. Fashion-MNIST, 2 workers.
#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <set>
#include <string_view>

#include "daemon_fixture.h"
#include "other_user.h"

namespace batchd::testing {
namespace {

constexpr uint32_t kBatch = 2000;  // 30 batches per epoch
constexpr uint64_t kPerEpoch = 30;

StreamOptions share_options(const std::string& share, uint32_t num_epochs = 2) {
  StreamOptions o;
  o.dataset = "fashion-mnist";
  o.pipeline = "fmnist";
  o.batch_size = kBatch;
  o.seed = 7;
  o.num_epochs = num_epochs;
  o.share = share;
  return o;
}

// Hash of every tensor byte of a batch (image, label, index).
uint64_t digest(const Batch& batch) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& t : batch.tensors()) {
    h ^= std::hash<std::string_view>()(std::string_view(static_cast<const char*>(t.data), t.nbytes));
    h *= 1099511628211ull;
  }
  return h;
}

struct Reader {
  std::optional<Client> client;
  std::optional<Stream> stream;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> digests;  // (epoch, batch) -> digest
  std::vector<std::pair<uint64_t, uint64_t>> order;           // (epoch, batch) as received
  std::map<uint64_t, std::multiset<int64_t>> indices;         // epoch -> sample indices
  bool ended = false;

  void open(const std::string& socket, const StreamOptions& o) {
    auto c = Client::connect(socket);
    ASSERT_TRUE(c.ok()) << c.error().message();
    client.emplace(std::move(c).value());
    auto s = client->open_stream(o);
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.emplace(std::move(s).value());
  }
  // Reads one batch; false at the end.
  bool step() {
    if (ended) return false;
    auto b = stream->next();
    EXPECT_TRUE(b.ok()) << b.error().message();
    if (!b.ok() || !*b) {
      ended = true;
      return false;
    }
    const Batch& batch = **b;
    digests[{batch.epoch(), batch.index()}] = digest(batch);
    order.emplace_back(batch.epoch(), batch.index());
    const Tensor* index = batch.find("index");
    for (size_t i = 0; i < batch.size(); ++i) indices[batch.epoch()].insert(index->data_as<int64_t>()[i]);
    return true;
  }
};

const StreamStatus* find_share(const DaemonStatus& st, const std::string& share) {
  for (const auto& s : st.streams) {
    if (s.share == share) return &s;
  }
  return nullptr;
}

void expect_every_index_once(const Reader& r, uint64_t epoch) {
  const auto it = r.indices.find(epoch);
  ASSERT_NE(it, r.indices.end()) << "no batch of epoch " << epoch;
  EXPECT_EQ(it->second.size(), 60000u);
  EXPECT_EQ(std::set<int64_t>(it->second.begin(), it->second.end()).size(), 60000u) << "epoch " << epoch;
}

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

TEST_F(ShareTest, AnotherUidCannotJoin) {
  SKIP_UNLESS_ROOT();
  Reader a;
  auto daemon = start_daemon();
  open_socket_to_everyone(daemon.socket_path());
  a.open(daemon.socket_path(), share_options("mine"));
  const std::string socket = daemon.socket_path();
  UserProcess nobody(Credentials{}, [&](int out, int) {
    auto c = Client::connect(socket);
    if (!c.ok()) return UserProcess::send(out, "connect: " + c.error().message() + "\n");
    auto s = c->open_stream(share_options("mine"));
    UserProcess::send(out, (s.ok() ? std::string("joined") : s.error().message()) + "\n");
  });
  const std::string said = nobody.read_line();
  EXPECT_NE(said.find("was created by uid 0; only that uid and admins may join it"), std::string::npos) << said;
}

// A subscriber in another process: joins, reads `reads` batches (holding the last), says "ready", waits for a byte
// on its `go` pipe, then reads on, saying "batch" per batch or the error that ended it.
struct Subscriber {
  pid_t pid = -1;
  int out = -1;  // what it says
  int go = -1;   // write a byte to let it read on
  ~Subscriber() {
    if (out >= 0) ::close(out);
    if (go >= 0) ::close(go);
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

void start_subscriber(const std::string& socket, const std::string& share, int reads, Subscriber* sub) {
  int out[2], go[2];
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    ::close(go[1]);
    auto c = Client::connect(socket);
    if (!c.ok()) ::_exit(2);
    auto s = c->open_stream(share_options(share));
    if (!s.ok()) ::_exit(3);
    std::optional<Batch> held;
    for (int i = 0; i < reads; ++i) {
      auto b = s->next();
      if (!b.ok() || !*b) ::_exit(4);
      held = std::move(**b);
    }
    UserProcess::send(out[1], "ready\n");
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(5);
    for (;;) {
      auto b = s->next();
      UserProcess::send(out[1], (b.ok() ? std::string("batch") : b.error().message()) + "\n");
      if (!b.ok() || !*b) ::_exit(0);
    }
  }
  ::close(out[1]);
  ::close(go[0]);
  sub->pid = pid;
  sub->out = out[0];
  sub->go = go[1];
}

std::string read_line_from(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

TEST_F(ShareTest, ASubscriberKilledMidEpochLeavesTheOthersRunningAndNothingBehind) {
  auto daemon = start_daemon("file_system");
  Subscriber child;
  start_subscriber(daemon.socket_path(), "killed", 5, &child);
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ(read_line_from(child.out), "ready");
  Reader a, b;
  a.open(daemon.socket_path(), share_options("killed"));
  b.open(daemon.socket_path(), share_options("killed"));
  for (int i = 0; i < 10; ++i) {
    a.step();
    b.step();
  }
  ::kill(child.pid, SIGKILL);
  ::waitpid(child.pid, nullptr, 0);
  child.pid = -1;
  while (a.step() | b.step()) {
  }
  EXPECT_EQ(a.order.size(), 2 * kPerEpoch);
  EXPECT_EQ(b.digests, a.digests);
  expect_every_index_once(a, 0);
  const DaemonStatus st = daemon_status(daemon.socket_path());
  const StreamStatus* share = find_share(st, "killed");
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->subscribers.size(), 2u) << "the killed subscriber was removed";
  a.stream.reset();
  b.stream.reset();
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    const DaemonStatus now = daemon_status(daemon.socket_path());
    gone = now.streams.empty() && now.segments.empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "the production ends with its last subscriber";
  EXPECT_TRUE(shm_names_of(st.instance_id).empty()) << "its /dev/shm name was unlinked";
}

TEST_F(ShareTest, AStoppedSubscriberIsDroppedNamingItsLagAndTheOthersFinish) {
  Subscriber child;
  start_subscriber(daemon().socket_path(), "stopped", 2, &child);
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ(read_line_from(child.out), "ready");
  ::kill(child.pid, SIGSTOP);
  ASSERT_EQ(::write(child.go, "g", 1), 1);  // read when it continues
  Reader a;
  a.open(daemon().socket_path(), share_options("stopped"));
  while (a.step()) {  // would stall forever if the production waited for the stopped one
  }
  EXPECT_EQ(a.order.size(), 2 * kPerEpoch);
  expect_every_index_once(a, 0);
  expect_every_index_once(a, 1);
  const DaemonStatus st = daemon_status(daemon().socket_path());
  const StreamStatus* share = find_share(st, "stopped");
  ASSERT_NE(share, nullptr);
  bool failed = false;
  for (const auto& sub : share->subscribers) failed |= sub.client_pid == child.pid && sub.state == "failed";
  EXPECT_TRUE(failed);
  ::kill(child.pid, SIGCONT);
  std::string said;
  for (said = read_line_from(child.out); said == "batch"; said = read_line_from(child.out)) {
  }
  EXPECT_NE(said.find("batches behind"), std::string::npos) << said;
  EXPECT_NE(said.find("shares.max_lag = 8"), std::string::npos) << said;
}

}  // namespace
}  // namespace batchd::testing
