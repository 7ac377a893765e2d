// What a careless or hostile attached worker can do to its trainer's stream, and what the daemon does about it: a
// WorkerDone that answers another task, or names a failed sample outside its task, detaches the worker (WorkerDetach
// with must_exit, then EOF) and the batch is made once by another worker; a worker that never answers is detached at
// its task's deadline, and what it wrote on its progress page blames no sample that is not its task's; a worker's
// error message reaches the trainer bounded and still valid UTF-8, with a code a dataset's failure may have (no
// DEADLINE_EXCEEDED, which batchd.Loader would wait on forever), while the daemon keeps serving other streams.
#include <future>

#include "attached_fixture.h"

namespace batchd::testing {
namespace {

using std::chrono::milliseconds;

constexpr uint64_t kSize = 64;
constexpr uint32_t kBatch = 8;

bool has(const wire::WorkerTask& task, int64_t sample) {
  return std::find(task.indices().begin(), task.indices().end(), sample) != task.indices().end();
}

// A sample index of the dataset that is none of `task`'s (nor `other`'s, if given).
int64_t outside(const wire::WorkerTask& task, const wire::WorkerTask* other = nullptr) {
  for (int64_t i = kSize - 1; i >= 0; --i) {
    if (!has(task, i) && (other == nullptr || !has(*other, i))) return i;
  }
  return -1;
}

class AttachedRecovery : public SharedDaemonTest {};

TEST_F(AttachedRecovery, AnAnswerToAnotherTaskDetachesTheWorkerAndTheBatchIsMadeOnce) {
  const std::vector<std::pair<std::string, std::function<void(wire::WorkerDone*, const wire::WorkerTask&)>>> lies = {
      {"another sequence", [](wire::WorkerDone* d, const wire::WorkerTask& t) { d->set_sequence(t.sequence() + 1); }},
      {"another begin", [](wire::WorkerDone* d, const wire::WorkerTask& t) { d->set_begin(t.begin() + 1); }},
      {"another stream", [](wire::WorkerDone* d, const wire::WorkerTask& t) { d->set_stream_id(t.stream_id() + 1); }},
      {"a failed sample outside the task",
       [](wire::WorkerDone* d, const wire::WorkerTask& t) {
         d->mutable_error()->set_code(wire::DATA_ERROR);
         d->mutable_error()->set_message("not mine");
         d->set_sample_failed(true);
         d->set_failed_sample(outside(t));
       }},
      {"bytes written past its slot",
       [](wire::WorkerDone* d, const wire::WorkerTask&) {
         auto* past = d->add_written();
         past->set_offset(uint64_t{1} << 40);
         past->set_bytes(16);
       }},
  };
  for (const auto& [what, lie] : lies) {
    SCOPED_TRACE(what);
    auto trainer = Client::connect(daemon().socket_path());
    ASSERT_TRUE(trainer.ok()) << trainer.error().message();
    auto stream = trainer->open_stream(external_options(kSize, kBatch, 2));
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    RawConnection liar(daemon().socket_path());
    ASSERT_TRUE(raw_attach(liar, stream->info().id).attached());
    auto task = raw_next_task(liar);
    ASSERT_TRUE(task.has_value());
    wire::Request done = done_for(*task);
    lie(done.mutable_worker_done(), *task);
    liar.send_request(done);
    EXPECT_EQ(expect_must_exit_then_eof(liar), "");
    GoodWorkers good(daemon().socket_path(), stream->info().id, 2);
    EXPECT_EQ(read_exactly_once(*stream, kSize), "");
  }
}

TEST(AttachedWatchdog, ASilentWorkerIsDetachedAtItsDeadlineAndItsPageBlamesNoOtherSample) {
  // Deadline: max(1 s, 1 ms x samples) = 1 s per task.
  auto daemon = start_daemon_with("attached-watchdog", "[daemon]\ntask_timeout_min_s = 1\nper_sample_timeout_ms = 1\n");
  auto trainer = Client::connect(daemon.socket_path());
  ASSERT_TRUE(trainer.ok()) << trainer.error().message();
  StreamOptions options = external_options(kSize, kBatch, 2);
  options.on_error = OnError::kSkip;
  auto stream = trainer->open_stream(options);
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  const uint64_t id = stream->info().id;
  // Two silent workers, each on a task of its own, each claiming (on a page that names its task) the same sample of
  // another batch: two deaths on one sample would make it a bad sample, skipped, if the claims were believed.
  RawConnection a(daemon.socket_path()), b(daemon.socket_path());
  RawAttachment attach_a = raw_attach(a, id), attach_b = raw_attach(b, id);
  ASSERT_TRUE(attach_a.attached() && attach_b.attached());
  auto task_a = raw_next_task(a), task_b = raw_next_task(b);
  ASSERT_TRUE(task_a && task_b);
  const int64_t claimed = outside(*task_a, &*task_b);  // in another batch
  ASSERT_GE(claimed, 0);
  MappedPage page_a(attach_a.page.get()), page_b(attach_b.page.get());
  for (auto [page, task] : {std::pair{page_a.get(), &*task_a}, std::pair{page_b.get(), &*task_b}}) {
    ASSERT_NE(page, nullptr);
    page->stream_id = task->stream_id();
    page->sequence = task->sequence();
    page->begin = task->begin();
    page->sample = claimed;
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(expect_must_exit_then_eof(a), "");
  EXPECT_EQ(expect_must_exit_then_eof(b), "");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 3.0) << "the watchdog took " << waited << " s for a 1 s deadline";
  GoodWorkers good(daemon.socket_path(), id, 2);
  EXPECT_EQ(read_exactly_once(*stream, kSize), "");
  const auto status = daemon_status(daemon.socket_path());
  ASSERT_EQ(status.streams.size(), 1u);
  EXPECT_EQ(status.streams[0].workers_detached, 2u);
}

// A message of about `bytes` bytes, mostly two-byte characters, with a character across byte `cut`.
std::string long_non_ascii_message(size_t bytes, size_t cut) {
  std::string m = cut % 2 == 0 ? "x" : "";
  while (m.size() < bytes) m += "\xc3\xa9";  // é
  return m;
}

TEST(AttachedErrors, AHugeMessageIsCutToValidUtf8AndItsCodeIsADatasetsWhileOthersAreServed) {
  // Requests up to 4 MiB, so that a 1 MiB message reaches the daemon whole; tasks time out after 3 s.
  auto daemon = start_daemon_with("attached-errors", "[daemon]\ntask_timeout_min_s = 3\n[limits]\n"
                                                     "max_request_bytes = 4194304\n");
  // Another client's ordinary stream, read to its end meanwhile.
  auto other = Client::connect(daemon.socket_path());
  ASSERT_TRUE(other.ok()) << other.error().message();
  auto fmnist = other->open_stream(fmnist_options());
  ASSERT_TRUE(fmnist.ok()) << fmnist.error().message();
  auto beside = std::async(std::launch::async, [&] { return check_exactly_once(*fmnist, 1, 10000); });

  // (An undeclared code closes the worker's connection: attached_worker_test.cc.)
  for (const wire::ErrorCode code : {wire::DEADLINE_EXCEEDED, wire::UNAVAILABLE, wire::ERROR_UNSPECIFIED}) {
    SCOPED_TRACE("error code " + std::to_string(code));
    auto trainer = Client::connect(daemon.socket_path());
    ASSERT_TRUE(trainer.ok()) << trainer.error().message();
    auto stream = trainer->open_stream(external_options(kSize, kBatch, 1));
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    RawConnection worker(daemon.socket_path());
    ASSERT_TRUE(raw_attach(worker, stream->info().id).attached());
    auto task = raw_next_task(worker);
    ASSERT_TRUE(task.has_value());
    wire::Request done = done_for(*task);
    auto* d = done.mutable_worker_done();
    d->mutable_error()->set_code(code);
    d->mutable_error()->set_message(long_non_ascii_message((1 << 20) - 4096, 4096));
    d->set_sample_failed(true);
    d->set_failed_sample(task->indices(0));
    worker.send_request(done);
    auto batch = stream->next(milliseconds(2000));
    ASSERT_FALSE(batch.ok()) << "the stream went on";
    EXPECT_EQ(batch.error().code(), ErrorCode::kDataError) << batch.error().message().substr(0, 300);
    EXPECT_LT(batch.error().message().size(), 4096u + 512u) << "the trainer's message is not bounded";
    EXPECT_NE(batch.error().message().find("\xc3\xa9\xc3\xa9"), std::string::npos)
        << batch.error().message().substr(0, 300);
  }
  EXPECT_EQ(beside.get(), "") << "the other client's stream";
}

TEST(AttachedErrors, AFailedSampleWithALongNonAsciiMessageReachesTheTrainer) {
  auto daemon = start_daemon_with("attached-utf8", "[daemon]\ntask_timeout_min_s = 3\n");
  auto trainer = Client::connect(daemon.socket_path());
  ASSERT_TRUE(trainer.ok()) << trainer.error().message();
  auto stream = trainer->open_stream(external_options(kSize, kBatch, 1));
  ASSERT_TRUE(stream.ok()) << stream.error().message();
  AttachedWorker::Options options;
  options.connect.socket_path = daemon.socket_path();
  options.exit_on_detach = false;
  auto worker = AttachedWorker::attach(stream->info().id, options);
  ASSERT_TRUE(worker.ok()) << worker.error().message();
  auto task = (*worker)->next_task(milliseconds(5000));
  ASSERT_TRUE(task.ok() && *task) << (task.ok() ? "no task" : task.error().message());
  // The client library cuts what it sends (a Python traceback's last line may be long, and not ASCII).
  ASSERT_TRUE((*worker)->fail_sample(**task, (*task)->indices[0], long_non_ascii_message(10000, 4096)).ok());
  auto batch = stream->next(milliseconds(2000));
  ASSERT_FALSE(batch.ok()) << "the stream went on";
  EXPECT_EQ(batch.error().code(), ErrorCode::kDataError) << batch.error().message().substr(0, 300);
  EXPECT_NE(batch.error().message().find("sample " + std::to_string((*task)->indices[0])), std::string::npos)
      << batch.error().message().substr(0, 300);
}

}  // namespace
}  // namespace batchd::testing
