// A trainer's own Dataset (OpenStream.external) against a real daemon, over raw connections: its workers attach,
// get the stream's tasks over their connection, answer them, and the trainer gets each batch once, even when a worker
// connection breaks mid-task (what batchd.Loader's workers do, without Python).
#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

class AttachedWorkerTest : public SharedDaemonTest {
 protected:
  // Opens a stream of a 20-sample Dataset (one float32 [4] field), batches of 10, for one attached worker.
  uint64_t open_external(RawConnection& trainer) {
    wire::Request open;
    open.set_request_id(1);
    auto* o = open.mutable_open_stream();
    o->set_batch_size(10);
    auto* ext = o->mutable_external();
    ext->set_size(20);
    ext->set_workers(1);
    ext->set_name("Synthetic");
    auto* x = ext->add_fields();
    x->set_name("x");
    x->set_dtype(wire::FLOAT32);
    x->add_sample_shape(4);
    trainer.send_request(open);
    std::vector<wire::UniqueFd> fds;
    auto opened = trainer.read_reply(&fds);
    EXPECT_TRUE(opened && opened->has_stream_opened()) << (opened ? opened->DebugString() : "EOF");
    return opened && opened->has_stream_opened() ? opened->stream_opened().stream_id() : 0;
  }
  // Attaches `worker` to `stream_id`: the WorkerAttached reply with the segment fd, then the progress page's.
  void attach(RawConnection& worker, uint64_t stream_id) {
    wire::Request attach;
    attach.set_request_id(2);
    attach.mutable_attach_worker()->set_stream_id(stream_id);
    worker.send_request(attach);
    std::vector<wire::UniqueFd> fds;
    auto attached = worker.read_reply(&fds);
    ASSERT_TRUE(attached && attached->has_worker_attached()) << (attached ? attached->DebugString() : "EOF");
    auto page = worker.read_reply(&fds);
    ASSERT_TRUE(page && page->progress_page()) << (page ? page->DebugString() : "EOF");
    EXPECT_EQ(fds.size(), 2u) << "the segment's fd and the page's";
  }
  // The next task sent to `worker` (a test failure if none comes within the connection's 5 s read timeout).
  static std::optional<wire::WorkerTask> next_task(RawConnection& worker) {
    auto event = worker.read_reply();
    EXPECT_TRUE(event && event->has_worker_task()) << (event ? event->DebugString() : "no task within 5 s");
    return event && event->has_worker_task() ? std::optional(event->worker_task()) : std::nullopt;
  }
  static void answer(RawConnection& worker, const wire::WorkerTask& task) {
    wire::Request done;
    done.set_request_id(3);
    auto* d = done.mutable_worker_done();
    d->set_stream_id(task.stream_id());
    d->set_sequence(task.sequence());
    d->set_slot(task.slot());
    d->set_begin(task.begin());
    worker.send_request(done);
  }
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
  std::vector<uint64_t> delivered;
  for (;;) {
    auto event = trainer.read_reply();
    ASSERT_TRUE(event) << "the stream did not end";
    if (event->has_batch_ready()) delivered.push_back(event->batch_ready().sequence());
    if (event->has_stream_end()) break;
    ASSERT_FALSE(event->has_stream_failed()) << event->stream_failed().error().message();
  }
  EXPECT_EQ(delivered, (std::vector<uint64_t>{0, 1})) << "each batch once";
}

TEST_F(AttachedWorkerTest, AnAnswerWithAnUndeclaredErrorCodeEndsTheWorkerAndItsTaskIsRedoneAtOnce) {
  RawConnection trainer(daemon().socket_path());
  const uint64_t id = open_external(trainer);
  ASSERT_NE(id, 0u);
  RawConnection bad(daemon().socket_path());
  attach(bad, id);
  auto task = next_task(bad);
  ASSERT_TRUE(task);
  wire::Request done;
  done.set_request_id(3);
  auto* d = done.mutable_worker_done();
  d->set_stream_id(task->stream_id());
  d->set_sequence(task->sequence());
  d->set_slot(task->slot());
  d->set_begin(task->begin());
  d->mutable_error()->set_code(static_cast<wire::ErrorCode>(77));  // no such code: check_enums refuses it
  bad.send_request(done);
  bool closed = false;
  for (int i = 0; i < 3 && !closed; ++i) {  // an Error naming the value, then EOF (not the 30 s watchdog)
    auto event = bad.read_reply();
    closed = !event;
    if (event) EXPECT_TRUE(event->has_error() || event->has_worker_task()) << event->DebugString();
  }
  EXPECT_TRUE(closed) << "the worker's connection stays open";
  RawConnection good(daemon().socket_path());
  attach(good, id);
  for (int i = 0; i < 2; ++i) {
    auto next = next_task(good);  // within the 5 s read timeout: the redo did not wait for the watchdog
    ASSERT_TRUE(next);
    answer(good, *next);
  }
  int delivered = 0;
  for (;;) {
    auto event = trainer.read_reply();
    ASSERT_TRUE(event) << "the stream did not end";
    delivered += event->has_batch_ready();
    if (event->has_stream_end()) break;
    ASSERT_FALSE(event->has_stream_failed()) << event->stream_failed().error().message();
  }
  EXPECT_EQ(delivered, 2);
}

}  // namespace
}  // namespace batchd::testing
