// AttachedWorkers (a trainer's own worker processes, attached to its stream) with fake links: the limit, slot reuse,
// tasks out and answers in, a mismatched answer, the bound on a worker's error (valid UTF-8, a dataset's code), the
// end of the stream.
#include "workers/attached_workers.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "attached_workers_support.h"

namespace batchd::daemon {
namespace {

using testing::AttachedWorkersTest;
using testing::done_for;
using testing::kStream;
using testing::RecordingLink;

TEST_F(AttachedWorkersTest, AttachesUpToTheLimitThenRefusesNamingTheKey) {
  EXPECT_EQ(attach(&links_[0], 10).worker, 0u);
  EXPECT_EQ(attach(&links_[1], 11).worker, 1u);
  auto third = sut_.attach(&links_[2], 12, 1012);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(third.error().message().find("stream 5 already has 2 attached workers (limits.max_attached_workers)"),
            std::string::npos)
      << third.error().message();
  EXPECT_EQ(sut_.attached(), 2u);
  EXPECT_FALSE(sut_.has(12));
}

TEST_F(AttachedWorkersTest, SlotNumbersAreReusedByTheNextWorkerToAttach) {
  attach(&links_[0], 10);
  attach(&links_[1], 11);
  sut_.gone(10);
  EXPECT_EQ(sut_.attached(), 1u);
  EXPECT_EQ(attach(&links_[2], 12).worker, 0u) << "the first free slot";
  EXPECT_EQ(sut_.size(), 2u);
  const auto rows = sut_.describe();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].pid(), 1012);
  EXPECT_EQ(rows[1].pid(), 1011);
  EXPECT_FALSE(sut_.attach(&links_[3], 13, 1013).ok()) << "full again";
}

TEST_F(AttachedWorkersTest, AnIdleWorkerGetsItsTaskOverItsLinkAndItsAnswerIsDone) {
  EXPECT_FALSE(sut_.idle_worker()) << "no worker attached yet";
  attach(&links_[0], 10);
  ASSERT_EQ(sut_.idle_worker(), 0u);
  Task t = assign(0);
  ASSERT_EQ(links_[0].tasks.size(), 1u);
  EXPECT_EQ(links_[0].tasks[0].sequence(), 3u);
  EXPECT_EQ(links_[0].tasks[0].indices(2), 42);
  EXPECT_FALSE(sut_.idle_worker());
  EXPECT_EQ(sut_.describe()[0].state(), "busy");
  ASSERT_TRUE(sut_.done(10, done_for(t)).ok());
  ASSERT_EQ(events_.done.size(), 1u);
  EXPECT_EQ(events_.done[0].w, 0u);
  EXPECT_EQ(events_.done[0].task.sequence(), 3u);
  EXPECT_EQ(events_.done[0].task.begin(), 4u);
  EXPECT_EQ(sut_.idle_worker(), 0u);
  EXPECT_EQ(sut_.describe()[0].state(), "idle");
  EXPECT_EQ(sut_.describe()[0].batches_done(), 1u);

  Task bad = assign(0);  // a sample of its own task failed: an answer like any other (on_error decides)
  wire::WorkerDone failed = done_for(bad);
  failed.mutable_error()->set_code(wire::DATA_ERROR);
  failed.mutable_error()->set_message("ValueError: bad image");
  failed.set_sample_failed(true);
  failed.set_failed_sample(41);
  ASSERT_TRUE(sut_.done(10, failed).ok());
  ASSERT_EQ(events_.done.size(), 2u);
  EXPECT_EQ(events_.done[1].done.failed_sample(), 41);
  EXPECT_TRUE(links_[0].detaches.empty());
  EXPECT_TRUE(events_.lost.empty());
}

TEST_F(AttachedWorkersTest, AnAnswerThatIsNotToItsTaskDetachesTheWorkerAndItsTaskIsLost) {
  const std::vector<std::pair<std::string, std::function<void(wire::WorkerDone*)>>> cases = {
      {"another sequence", [](wire::WorkerDone* d) { d->set_sequence(4); }},
      {"another begin", [](wire::WorkerDone* d) { d->set_begin(0); }},
      {"another stream", [](wire::WorkerDone* d) { d->set_stream_id(kStream + 1); }},
      {"a failed sample outside the task", [](wire::WorkerDone* d) {
         d->mutable_error()->set_code(wire::DATA_ERROR);
         d->set_sample_failed(true);
         d->set_failed_sample(7);  // another stream's or batch's index
       }},
      {"bytes written in another task's rows", [](wire::WorkerDone* d) {
         auto* rows = d->add_written();  // rows 0..3 of "image": the task has rows 4..7
         rows->set_offset(256);
         rows->set_bytes(4 * 784);
       }},
      {"no bytes written listed", [](wire::WorkerDone* d) { d->clear_written(); }},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].first);
    RecordingLink& link = links_[i];
    const uint64_t connection = 10 + i;
    const size_t w = attach(&link, connection).worker;
    Task t = assign(w);
    wire::WorkerDone answer = done_for(t);
    cases[i].second(&answer);
    const Status st = sut_.done(connection, answer);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code(), ErrorCode::kProtocol);
    ASSERT_EQ(link.detaches.size(), 1u);
    EXPECT_TRUE(link.detaches[0].must_exit());
    EXPECT_EQ(link.detaches[0].stream_id(), kStream);
    EXPECT_NE(link.detaches[0].reason().find("worker_done rejected"), std::string::npos) << link.detaches[0].reason();
    ASSERT_EQ(events_.lost.size(), i + 1) << "the task is lost, to be redone";
    EXPECT_EQ(events_.lost[i].w, w);
    EXPECT_EQ(events_.lost[i].task.sequence(), 3u);
    EXPECT_EQ(events_.lost[i].loss.culprit, -1) << "no sample is blamed for a worker's protocol error";
    EXPECT_FALSE(events_.lost[i].loss.timed_out);
    EXPECT_FALSE(sut_.has(connection));
    EXPECT_EQ(sut_.detached(), i + 1);
  }
  EXPECT_TRUE(events_.done.empty());

  RecordingLink& idle = links_[cases.size()];  // an answer with no task at all: detached too, nothing lost
  attach(&idle, 20);
  wire::WorkerDone unasked;
  unasked.set_stream_id(kStream);
  EXPECT_FALSE(sut_.done(20, unasked).ok());
  ASSERT_EQ(idle.detaches.size(), 1u);
  EXPECT_TRUE(idle.detaches[0].must_exit());
  EXPECT_EQ(events_.lost.size(), cases.size());
}

TEST_F(AttachedWorkersTest, AWorkersErrorIsCutTo4096BytesAndGetsADatasetsCode) {
  attach(&links_[0], 10);
  // DEADLINE_EXCEEDED is "no batch yet, poll again" to batchd.Loader, UNAVAILABLE "the daemon is gone".
  const std::vector<std::pair<int, wire::ErrorCode>> codes = {
      {999, wire::DATA_ERROR},
      {wire::ERROR_UNSPECIFIED, wire::DATA_ERROR},
      {wire::IO, wire::IO},
      {wire::NOT_FOUND, wire::NOT_FOUND},
      {wire::DEADLINE_EXCEEDED, wire::DATA_ERROR},
      {wire::UNAVAILABLE, wire::DATA_ERROR},
      {wire::RESOURCE_EXHAUSTED, wire::DATA_ERROR},
      {wire::PERMISSION_DENIED, wire::DATA_ERROR}};
  for (const auto& [sent, kept] : codes) {
    SCOPED_TRACE("code " + std::to_string(sent));
    Task t = assign(0);
    wire::WorkerDone answer = done_for(t);
    answer.mutable_error()->set_code(static_cast<wire::ErrorCode>(sent));
    answer.mutable_error()->set_message(std::string(10000, 'x'));
    ASSERT_TRUE(sut_.done(10, answer).ok());
    const wire::Error& error = events_.done.back().done.error();
    EXPECT_EQ(error.code(), kept);
    EXPECT_EQ(error.message().size(), 4096u);
  }
}

TEST_F(AttachedWorkersTest, AWorkersErrorCutInsideACharacterStaysValidUtf8) {
  attach(&links_[0], 10);
  Task t = assign(0);
  wire::WorkerDone answer = done_for(t);
  std::string message = "x";  // then two-byte characters: one across byte 4096
  while (message.size() < 10000) message += "\xc3\xa9";
  answer.mutable_error()->set_code(wire::DATA_ERROR);
  answer.mutable_error()->set_message(message);
  ASSERT_TRUE(sut_.done(10, answer).ok());
  const wire::Error& error = events_.done.back().done.error();
  EXPECT_EQ(error.message(), message.substr(0, 4095));
  wire::Error parsed;
  EXPECT_TRUE(parsed.ParseFromString(error.SerializeAsString())) << "the trainer could not read its StreamFailed";
}

TEST_F(AttachedWorkersTest, EndingTheStreamEndsEveryAttachmentAsClosed) {
  attach(&links_[0], 10);
  attach(&links_[1], 11);
  assign(0);
  sut_.detach_stream(kStream);
  for (const RecordingLink* link : {&links_[0], &links_[1]}) {
    ASSERT_EQ(link->detaches.size(), 1u);
    EXPECT_EQ(link->detaches[0].reason(), "closed");
    EXPECT_FALSE(link->detaches[0].must_exit()) << "the worker may attach to the next stream";
  }
  EXPECT_TRUE(events_.lost.empty()) << "the stream is gone: nothing to redo";
  EXPECT_EQ(sut_.attached(), 0u);
  EXPECT_EQ(sut_.detached(), 0u) << "not counted as detached by the watchdog or a broken connection";

  RecordingLink link;
  {
    AttachedWorkers pool(io_, kStream, 1, TaskTimeouts{}, events_);
    pool.set_slot_layout(testing::slot_layout());
    ASSERT_TRUE(pool.attach(&link, 12, 1012).ok());
  }
  ASSERT_EQ(link.detaches.size(), 1u) << "destroying the pool ends its attachments";
  EXPECT_EQ(link.detaches[0].reason(), "closed");
}

}  // namespace
}  // namespace batchd::daemon
