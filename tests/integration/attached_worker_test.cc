// A trainer's own Dataset (OpenStream.external) against a real daemon, over raw connections: its workers attach,
// get the stream's tasks over their connection, answer them, and the trainer gets each batch once, even when a worker
// connection breaks mid-task (what batchd.Loader's workers do, without Python).
#include "attached_fixture.h"

namespace batchd::testing {
namespace {

class AttachedWorkerTest : public SharedDaemonTest {
 protected:
  // Opens a stream of a 20-sample Dataset (one float32 [4] field), batches of 10, for one attached worker.
  uint64_t open_external(RawConnection& trainer) { return raw_open_external(trainer, 20, 10, 1); }
  // Attaches `worker` to `stream_id`: the WorkerAttached reply with the segment fd, then the progress page's.
  static void attach(RawConnection& worker, uint64_t stream_id) {
    const RawAttachment a = raw_attach(worker, stream_id);
    ASSERT_TRUE(a.attached()) << a.reply.DebugString();
    EXPECT_TRUE(a.segment.valid() && a.page.valid()) << "the segment's fd and the page's";
  }
  // The next task sent to `worker` (a test failure if none comes within the connection's 5 s read timeout).
  static std::optional<wire::WorkerTask> next_task(RawConnection& worker) {
    wire::Reply other;
    auto task = raw_next_task(worker, &other);
    EXPECT_TRUE(task) << "no task within 5 s: " << other.DebugString();
    return task;
  }
  static void answer(RawConnection& worker, const wire::WorkerTask& task) { worker.send_request(done_for(task)); }
};

TEST_F(AttachedWorkerTest, TheFirstWorkerToAttachGetsWorkAndABrokenOneCostsARedoNeverABatch) {
  RawConnection trainer(daemon().socket_path());
  const uint64_t id = open_external(trainer);
  ASSERT_NE(id, 0u);
  std::optional<wire::WorkerTask> lost;
  {
    RawConnection first(daemon().socket_path());
    attach(first, id);
    lost = next_task(first);  // nothing else happens on the daemon: only the attach can start the stream
    ASSERT_TRUE(lost);
    EXPECT_EQ(lost->sequence(), 0u);
  }  // its connection closes mid-task (the process was killed)
  RawConnection second(daemon().socket_path());  // its replacement (it may attach before the daemon saw the close)
  attach(second, id);
  bool redone = false;
  for (int i = 0; i < 2; ++i) {  // the redo of batch 0 and batch 1, in either order
    auto task = next_task(second);
    ASSERT_TRUE(task);
    if (task->sequence() == lost->sequence()) {
      redone = true;
      EXPECT_EQ(task->attempt(), 1u);
      EXPECT_EQ(task->indices_size(), lost->indices_size());
    }
    answer(second, *task);
  }
  EXPECT_TRUE(redone);
  const RawStreamOutcome outcome = read_raw_stream(trainer, id);
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.delivered, (std::vector<uint64_t>{0, 1})) << "each batch once";
}

TEST_F(AttachedWorkerTest, AnAnswerWithAnUndeclaredErrorCodeEndsTheWorkerAndItsTaskIsRedoneAtOnce) {
  RawConnection trainer(daemon().socket_path());
  const uint64_t id = open_external(trainer);
  ASSERT_NE(id, 0u);
  RawConnection bad(daemon().socket_path());
  attach(bad, id);
  auto task = next_task(bad);
  ASSERT_TRUE(task);
  wire::Request done = done_for(*task);
  done.mutable_worker_done()->mutable_error()->set_code(static_cast<wire::ErrorCode>(77));  // check_enums refuses it
  bad.send_request(done);
  bool closed = false;
  for (int i = 0; i < 3 && !closed; ++i) {  // an Error naming the value, then EOF (not the 30 s watchdog)
    auto event = bad.read_reply();
    closed = !event;
    if (event) {
      EXPECT_TRUE(event->has_error() || event->has_worker_task()) << event->DebugString();
    }
  }
  EXPECT_TRUE(closed) << "the worker's connection stays open";
  RawConnection good(daemon().socket_path());
  attach(good, id);
  for (int i = 0; i < 2; ++i) {
    auto next = next_task(good);  // within the 5 s read timeout: the redo did not wait for the watchdog
    ASSERT_TRUE(next);
    answer(good, *next);
  }
  const RawStreamOutcome outcome = read_raw_stream(trainer, id);
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.delivered.size(), 2u);
}

}  // namespace
}  // namespace batchd::testing
