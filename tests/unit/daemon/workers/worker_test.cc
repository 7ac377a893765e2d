// The worker loop in-process (a thread on a socketpair): tasks are sample ranges [begin, end) of a batch, and two
// chunks of one slot made by separate tasks give the same bytes as the whole batch made at once.
#include "workers/worker.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <thread>

#include "../streams/fake_workers.h"
#include "batchd/wire/fd_passing.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/segment_layout.h"
#include "streams/plan.h"
#include "streams/segment_pool.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon {
namespace {

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ours_ = wire::UniqueFd(sv[0]);
    theirs_ = wire::UniqueFd(sv[1]);
    worker_ = std::thread([this] { exit_code_ = run_worker(theirs_.get(), datasets_, 1 << 20, &progress_); });
  }
  void TearDown() override {
    ours_ = wire::UniqueFd();  // EOF: the worker returns
    worker_.join();
    EXPECT_EQ(exit_code_, 0);
  }
  void send(const wire::WorkerCommand& command, int fd = -1) {
    auto frame = wire::encode_frame(command);
    ASSERT_TRUE(frame.ok());
    ASSERT_TRUE(wire::send_all(ours_.get(), frame->data(), frame->size(), fd).ok());
  }
  wire::WorkerDone receive() {
    std::string payload;
    for (;;) {
      auto more = decoder_.next(&payload);
      EXPECT_TRUE(more.ok());
      if (*more) break;
      char buffer[4096];
      std::vector<wire::UniqueFd> fds;
      auto n = wire::recv_some(ours_.get(), buffer, sizeof(buffer), &fds, 0);
      EXPECT_TRUE(n.ok() && *n > 0) << "the worker hung up";
      if (!n.ok() || *n == 0) return {};
      decoder_.feed(buffer, *n);
    }
    wire::WorkerDone done;
    EXPECT_TRUE(wire::parse_payload(payload, &done, "WorkerDone").ok());
    return done;
  }

  DatasetRegistry datasets_ = testing::fmnist_registry();
  WorkerProgress progress_;
  wire::UniqueFd ours_, theirs_;
  wire::FrameDecoder decoder_;
  std::thread worker_;
  int exit_code_ = -1;
};

TEST_F(WorkerTest, ChunksOfOneSlotMadeSeparatelyEqualTheWholeBatch) {
  auto p = plan(testing::fmnist_u8_request(10, 1), PlanContext{}, datasets_);
  ASSERT_TRUE(p.ok()) << p.error().message();
  SegmentPool pool(std::move(SegmentInstance::claim()).value(), 1 << 30);
  auto segment = pool.create(&*p, ::geteuid());
  ASSERT_TRUE(segment.ok());
  wire::WorkerCommand attach;
  *attach.mutable_attach() = p->attach;
  send(attach, segment->fd());
  // Two chunks, the second first: positions [6, 10) then [0, 6).
  for (uint32_t begin : {6u, 0u}) {
    wire::WorkerCommand task;
    auto* t = task.mutable_task();
    t->set_stream_id(segment->stream_id());
    t->set_sequence(0);
    t->set_epoch(0);
    t->set_batch(0);
    t->set_slot(0);
    t->set_begin(begin);
    t->set_batch_samples(10);
    for (uint32_t i = begin; i < (begin == 0 ? 6u : 10u); ++i) t->add_indices(100 + i);
    send(task);
    const auto done = receive();
    EXPECT_FALSE(done.has_error()) << done.error().message();
    EXPECT_EQ(done.begin(), begin) << "the answer names its chunk";
  }
  // The whole batch made at once, by the same pipeline, into a private buffer with the slot's offsets.
  const auto& o = p->opened;
  auto mapping = wire::Mapping::map(segment->fd(), o.segment_bytes(), false, false);
  ASSERT_TRUE(mapping.ok());
  const char* slot = mapping->data() + o.slot_offset();
  std::vector<char> expected(o.slot_stride());
  auto pipeline = make_pipeline("fmnist_u8", *datasets_.find("fmnist"), p->attach.pipeline_options());
  ASSERT_TRUE(pipeline.ok());
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 10; ++i) indices.push_back(100 + i);
  std::vector<uint64_t> offsets;
  for (const auto& t : o.tensors()) offsets.push_back(t.offset());
  ASSERT_TRUE((*pipeline)->run(indices, expected.data(), offsets, BatchContext{}).ok());
  for (int k = 0; k < 2; ++k) {  // image, label
    const auto& t = o.tensors(k);
    EXPECT_EQ(std::memcmp(slot + t.offset(), expected.data() + t.offset(), 10 * t.sample_bytes()), 0) << t.name();
  }
  const auto* index = reinterpret_cast<const int64_t*>(slot + o.tensors(2).offset());
  EXPECT_EQ(std::vector<int64_t>(index, index + 10), indices);
  wire::SlotHeader header{};
  std::memcpy(&header, slot, sizeof(header));
  EXPECT_EQ(header.magic, wire::kSlotMagic);
  EXPECT_EQ(header.num_samples, 10u) << "every chunk writes the whole batch's sample count";
}

TEST_F(WorkerTest, AChunkOutsideItsBatchIsRefused) {
  wire::OpenStream r;
  r.set_dataset("fmnist");
  r.set_pipeline("fmnist_u8");
  r.set_batch_size(10);
  auto p = plan(r, PlanContext{}, datasets_);
  ASSERT_TRUE(p.ok());
  SegmentPool pool(std::move(SegmentInstance::claim()).value(), 1 << 30);
  auto segment = pool.create(&*p, ::geteuid());
  ASSERT_TRUE(segment.ok());
  wire::WorkerCommand attach;
  *attach.mutable_attach() = p->attach;
  send(attach, segment->fd());
  wire::WorkerCommand task;
  auto* t = task.mutable_task();
  t->set_stream_id(segment->stream_id());
  t->set_begin(8);
  t->set_batch_samples(10);
  for (int i = 0; i < 4; ++i) t->add_indices(i);  // rows 8..11 of a 10-sample batch
  send(task);
  const auto done = receive();
  ASSERT_TRUE(done.has_error());
  EXPECT_EQ(done.error().code(), wire::INTERNAL);
}

}  // namespace
}  // namespace batchd::daemon
