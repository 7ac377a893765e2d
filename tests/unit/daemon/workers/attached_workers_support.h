// attached_workers_support.h — shared by the AttachedWorkers tests (attached_workers_test.cc,
// attached_workers_page_test.cc): a recording WorkerEvents, tasks of stream kStream, the progress page as a worker
// maps it, and a pool of 2 with fake links on a real io_context.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <deque>
#include <vector>

#include "../streams/fake_workers.h"
#include "workers/attached_workers.h"

namespace batchd::daemon::testing {

inline constexpr uint64_t kStream = 5;

// What the pool reports, kept in order.
struct RecordingEvents final : WorkerEvents {
  struct Done {
    size_t w;
    wire::WorkerDone done;
    Task task;
  };
  struct Lost {
    size_t w;
    Task task;
    TaskLoss loss;
  };
  void on_task_done(size_t w, const wire::WorkerDone& d, Task task) override { done.push_back({w, d, std::move(task)}); }
  void on_task_lost(size_t w, Task task, const TaskLoss& loss) override { lost.push_back({w, std::move(task), loss}); }
  void on_worker_ready(size_t) override { ADD_FAILURE() << "attached workers are never 'ready': they attach"; }
  std::vector<Done> done;
  std::vector<Lost> lost;
};

// Positions [begin, begin + indices) of batch `sequence` of stream kStream.
inline Task task_of(uint64_t sequence, uint32_t begin, std::vector<int64_t> indices) {
  Task t;
  t.work.set_stream_id(kStream);
  t.work.set_sequence(sequence);
  t.work.set_begin(begin);
  for (int64_t i : indices) t.work.add_indices(i);
  return t;
}

// The progress page as the worker maps it from the fd it was sent.
class WorkerPage final {
 public:
  explicit WorkerPage(int fd) : page_(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) {
    EXPECT_NE(page_, MAP_FAILED) << "mmap of the progress page: errno " << errno;
  }
  WorkerPage(const WorkerPage&) = delete;
  WorkerPage& operator=(const WorkerPage&) = delete;
  ~WorkerPage() {
    if (page_ != MAP_FAILED) ::munmap(page_, 4096);
  }
  // What a worker writes before each sample: its task and the sample.
  void claim(uint64_t stream_id, uint64_t sequence, uint32_t begin, int64_t sample) {
    if (page_ == MAP_FAILED) return;  // failed already (no page was attached)
    auto* p = static_cast<wire::WorkerProgress*>(page_);
    p->stream_id = stream_id;
    p->sequence = sequence;
    p->begin = begin;
    p->sample = sample;
  }

 private:
  void* page_;
};

class AttachedWorkersTest : public ::testing::Test {
 protected:
  AttachedWorkersTest() { sut_.set_slot_layout(slot_layout()); }
  AttachedWorkers::Attached attach(RecordingLink* link, uint64_t connection) {
    auto a = sut_.attach(link, connection, static_cast<int32_t>(1000 + connection));
    EXPECT_TRUE(a.ok()) << a.error().message();
    return a.ok() ? *a : AttachedWorkers::Attached{};
  }
  // Gives idle worker `w` batch 3's positions 4..7 (indices 40..43), as the scheduler does.
  Task assign(size_t w) {
    Task t = task_of(3, 4, {40, 41, 42, 43});
    sut_.assign(w, t, wire::WorkerAttach(), -1);
    return t;
  }

  boost::asio::io_context io_;
  RecordingEvents events_;
  std::deque<RecordingLink> links_{8};  // outlive sut_, which ends the attachments still open when destroyed
  AttachedWorkers sut_{io_, kStream, /*max_workers=*/2, TaskTimeouts{}, events_};

};

}  // namespace batchd::daemon::testing
