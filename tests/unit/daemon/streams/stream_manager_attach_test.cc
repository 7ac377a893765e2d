// StreamManager::attach_worker with fake links: who may attach to which stream, what a worker gets, that its tasks
// come only from its own stream, and that a worker's closed connection costs a redo, never a batch.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <boost/asio/io_context.hpp>
#include <deque>
#include <string>

#include "fake_workers.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {
namespace {

using testing::done_for;
using testing::RecordingLink;

constexpr uint32_t kUid = 1000;
const Peer kTrainer{7, 100, kUid};

class StreamManagerAttachTest : public ::testing::Test {
 protected:
  static StreamSettings config() {
    StreamSettings c;
    c.limits.max_shm_bytes = 1ull << 30;
    return c;
  }
  // A trainer's own Dataset of `size` samples (one float32 [4] field), batches of 10, 2 slots, `workers` workers.
  static wire::OpenStream external_request(uint64_t size, uint32_t workers) {
    wire::OpenStream r;
    r.set_batch_size(10);
    r.set_depth(2);
    auto* ext = r.mutable_external();
    ext->set_size(size);
    ext->set_workers(workers);
    ext->set_name("Synthetic");
    auto* x = ext->add_fields();
    x->set_name("x");
    x->set_dtype(wire::FLOAT32);
    x->add_sample_shape(4);
    return r;
  }
  uint64_t open(const wire::OpenStream& r) {
    auto opened = sut_.open(r, kTrainer, &sink_);
    EXPECT_TRUE(opened.ok()) << opened.error().message();
    return opened.ok() ? opened->reply.stream_id() : 0;
  }
  // A worker process of `uid` on connection `connection` attaches to `stream_id` as its own link.
  Result<StreamManager::WorkerAttachment> attach(uint64_t stream_id, uint64_t connection, uint32_t uid = kUid) {
    RecordingLink& link = links_.emplace_back();
    return sut_.attach_worker(stream_id, Peer{connection, static_cast<int32_t>(connection + 1000), uid}, &link);
  }
  // Answers every task `link` was sent and has not answered yet, in order (each answer may bring the next task).
  void answer_all(const RecordingLink& link, uint64_t connection, size_t* answered) {
    while (*answered < link.tasks.size()) {
      Task t;
      t.work = link.tasks[(*answered)++];
      sut_.worker_done(connection, t.stream_id(), done_for(t));
    }
  }

  boost::asio::io_context io_;  // the attached workers' watchdogs (never run here)
  StreamSettings config_ = config();
  DatasetRegistry datasets_ = testing::fmnist_registry();
  testing::FakeWorkers workers_{2};  // the daemon's own workers
  testing::RecordingSink sink_;
  std::deque<RecordingLink> links_;  // outlive sut_, which ends the attachments of its streams
  StreamManager sut_{config_, datasets_, workers_, std::move(SegmentInstance::claim()).value(), &io_};
};

TEST_F(StreamManagerAttachTest, AnotherUidsStreamAndAMissingOneGetTheSameAnswer) {
  const uint64_t id = open(external_request(100, 1));
  auto others = attach(id, 20, kUid + 1);
  ASSERT_FALSE(others.ok());
  const uint64_t missing = id + 100;
  auto nothing = attach(missing, 21, kUid + 1);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(others.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(nothing.error().code(), ErrorCode::kNotFound);
  std::string as_if_missing = others.error().message();
  const std::string id_text = "stream " + std::to_string(id) + " ";
  ASSERT_NE(as_if_missing.find(id_text), std::string::npos) << as_if_missing;
  as_if_missing.replace(as_if_missing.find(id_text), id_text.size(), "stream " + std::to_string(missing) + " ");
  EXPECT_EQ(as_if_missing, nothing.error().message()) << "nothing tells that another uid's stream exists";
  EXPECT_EQ(others.error().message().find("Synthetic"), std::string::npos);
}

TEST_F(StreamManagerAttachTest, AStreamOfADaemonDatasetTakesNoAttachedWorkers) {
  const uint64_t id = open(testing::fmnist_u8_request(100, 2));
  auto refused = attach(id, 20);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("OpenStream.external"), std::string::npos) << refused.error().message();
}

TEST_F(StreamManagerAttachTest, AWorkerGetsTheLayoutAReadWriteSegmentFdAndItsPage) {
  wire::OpenStream r = external_request(100, 2);
  auto opened = sut_.open(r, kTrainer, &sink_);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  const uint64_t id = opened->reply.stream_id();
  auto a = attach(id, 20);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->reply.worker(), 0u);
  EXPECT_EQ(a->reply.attach().stream_id(), id);
  EXPECT_EQ(a->reply.attach().slot_stride(), opened->reply.slot_stride());
  ASSERT_EQ(a->reply.attach().tensors_size(), 2);
  EXPECT_EQ(a->reply.attach().tensors(0).name(), "x");
  EXPECT_EQ(a->reply.attach().tensors(1).name(), "index");

  ASSERT_TRUE(a->segment_fd.valid());
  EXPECT_EQ(::fcntl(a->segment_fd.get(), F_GETFL) & O_ACCMODE, O_RDWR) << "the worker writes its rows of the slots";
  struct stat st {};
  ASSERT_EQ(::fstat(a->segment_fd.get(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), opened->reply.segment_bytes());
  void* map = ::mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, a->segment_fd.get(), 0);
  ASSERT_NE(map, MAP_FAILED);
  ::munmap(map, st.st_size);
  EXPECT_EQ(::fcntl(opened->client_fd.get(), F_GETFL) & O_ACCMODE, O_RDONLY) << "the trainer's own stays read-only";

  ASSERT_TRUE(a->progress_fd.valid());
  EXPECT_GE(::fcntl(a->progress_fd.get(), F_GET_SEALS), 0) << "a memfd: the sealed progress page";
  auto second = attach(id, 21);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->reply.worker(), 1u);

  wire::StatusReply status;
  sut_.fill_status(&status, StatusView::everything());
  ASSERT_EQ(status.streams_size(), 1);
  EXPECT_EQ(status.streams(0).external(), "python:Synthetic");
  EXPECT_EQ(status.streams(0).attached_workers_size(), 2);
}

// Its tasks go to its attached workers only, once their replies are out; the daemon's own workers never get one.
TEST_F(StreamManagerAttachTest, AnExternalStreamIsMadeByItsAttachedWorkersAlone) {
  const uint64_t id = open(external_request(100, 1));
  EXPECT_TRUE(workers_.assigned.empty()) << "the daemon's workers cannot make a trainer's Dataset";
  ASSERT_TRUE(attach(id, 20).ok());
  EXPECT_TRUE(links_.back().tasks.empty()) << "no task before the WorkerAttached reply is sent";
  sut_.after_worker_attached();
  ASSERT_FALSE(links_.back().tasks.empty()) << "the first worker to attach gets work";
  EXPECT_EQ(links_.back().tasks[0].stream_id(), id);
  EXPECT_EQ(links_.back().tasks[0].sequence(), 0u);
  EXPECT_TRUE(workers_.assigned.empty());
}

TEST_F(StreamManagerAttachTest, AWorkersClosedConnectionCostsARedoNeverABatch) {
  const uint64_t id = open(external_request(20, 1));  // 2 batches
  ASSERT_TRUE(attach(id, 20).ok());
  sut_.after_worker_attached();
  const RecordingLink& first = links_.back();
  ASSERT_EQ(first.tasks.size(), 1u);
  const wire::WorkerTask lost = first.tasks[0];
  sut_.close_all_of(20);  // the worker was killed mid-task
  EXPECT_EQ(sut_.batches_redone(), 1u);
  EXPECT_TRUE(first.detaches.empty()) << "its connection is closing: nothing is sent";
  EXPECT_TRUE(sink_.events.empty()) << "the stream goes on";

  ASSERT_TRUE(attach(id, 21).ok());  // the Loader's replacement
  sut_.after_worker_attached();
  const RecordingLink& second = links_.back();
  ASSERT_FALSE(second.tasks.empty());
  EXPECT_EQ(second.tasks[0].sequence(), lost.sequence()) << "the lost task first";
  EXPECT_EQ(second.tasks[0].attempt(), 1u);
  EXPECT_EQ(std::vector<int64_t>(second.tasks[0].indices().begin(), second.tasks[0].indices().end()),
            std::vector<int64_t>(lost.indices().begin(), lost.indices().end()));
  size_t answered = 0;
  answer_all(second, 21, &answered);
  std::vector<uint64_t> delivered;
  bool ended = false;
  for (const auto& e : sink_.events) {
    if (e.has_batch_ready()) delivered.push_back(e.batch_ready().sequence());
    ended = ended || e.has_stream_end();
    EXPECT_FALSE(e.has_stream_failed()) << e.stream_failed().error().message();
  }
  EXPECT_EQ(delivered, (std::vector<uint64_t>{0, 1})) << "each batch exactly once";
  EXPECT_TRUE(ended);
  EXPECT_EQ(sut_.batches_redone(), 1u);
  wire::StatusReply status;
  sut_.fill_status(&status, StatusView::everything());
  ASSERT_EQ(status.streams_size(), 1);
  EXPECT_EQ(status.streams(0).workers_detached(), 1u);
  EXPECT_EQ(status.streams(0).attached_workers_size(), 1);

  sut_.close_all_of(kTrainer.connection_id);  // the trainer exits: its stream goes, and with it the attachment
  ASSERT_EQ(second.detaches.size(), 1u);
  EXPECT_EQ(second.detaches[0].reason(), "closed");
}

}  // namespace
}  // namespace batchd::daemon
