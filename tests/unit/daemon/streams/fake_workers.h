// fake_workers.h — a worker pool, an event sink and an attached worker's link for in-process tests of the scheduler,
// the stream manager and the attached workers: no processes; the test decides when each worker finishes or dies (the
// iceoryx moduletests' way: the object under test is `sut`, its OS side is faked).
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "streams/stream_manager.h"
#include "workers/workers.h"

namespace batchd::daemon::testing {

class FakeWorkers final : public Workers {
 public:
  explicit FakeWorkers(size_t count) : running_(count) {}

  std::optional<size_t> idle_worker() const override {
    for (size_t w = 0; w < running_.size(); ++w) {
      if (!running_[w] && !down_.count(w)) return w;
    }
    return std::nullopt;
  }
  void assign(size_t w, Task task, const wire::WorkerAttach& attach, int segment_fd) override {
    EXPECT_FALSE(running_.at(w)) << "worker " << w << " was given a task while busy";
    EXPECT_EQ(attach.stream_id(), task.stream_id()) << "the attach must describe the task's stream";
    EXPECT_GE(segment_fd, 0);
    assigned.emplace_back(w, task);
    running_[w] = std::move(task);
  }
  void detach_stream(uint64_t stream_id) override { detached.push_back(stream_id); }
  std::vector<wire::WorkerInfo> describe() const override {
    std::vector<wire::WorkerInfo> rows(running_.size());
    for (size_t w = 0; w < rows.size(); ++w) rows[w].set_state(running_[w] ? "busy" : "idle");
    return rows;
  }

  size_t size() const override { return running_.size(); }

  // The task worker `w` runs (it stays running until take()).
  const Task& task(size_t w) const { return *running_.at(w); }
  bool busy(size_t w) const override { return running_.at(w).has_value(); }
  // Worker `w` stops running its task (finished or died) and hands it back.
  Task take(size_t w) {
    Task t = std::move(*running_.at(w));
    running_[w].reset();
    return t;
  }
  // A down worker is never idle (its replacement did not start yet).
  void set_down(size_t w, bool down) { down ? (void)down_.insert(w) : (void)down_.erase(w); }

  std::vector<std::pair<size_t, Task>> assigned;  // every assignment, in order
  std::vector<uint64_t> detached;

 private:
  std::vector<std::optional<Task>> running_;
  std::set<size_t> down_;
};

// A connection's EventSink that keeps every event sent to it.
struct RecordingSink final : EventSink {
  void send_event(const wire::Reply& event) override { events.push_back(event); }
  std::vector<wire::Reply> events;
};

// An attached worker's connection (WorkerLink, workers/attached_workers.h) that keeps what the daemon sends it.
struct RecordingLink final : WorkerLink {
  void send_task(const wire::WorkerTask& task) override { tasks.push_back(task); }
  void end_attachment(const wire::WorkerDetach& detach) override { detaches.push_back(detach); }
  std::vector<wire::WorkerTask> tasks;
  std::vector<wire::WorkerDetach> detaches;
};

// The WorkerDone a worker sends for `task` when it succeeds: it wrote the slot header (WorkerDone.written).
inline wire::WorkerDone done_for(const Task& task) {
  wire::WorkerDone done;
  done.set_stream_id(task.stream_id());
  done.set_sequence(task.sequence());
  done.set_slot(task.work.slot());
  done.set_begin(task.begin());
  auto* header = done.add_written();
  header->set_offset(0);
  header->set_bytes(48);  // sizeof(wire::SlotHeader)
  return done;
}

// A stream's slot layout for AttachedWorkers::assign: slots of 64 KiB, batches of 8, an "image" field of 784
// bytes per sample at 256, then "index" at 6656 (256 + 8 x 784, 256-aligned).
inline wire::WorkerAttach slot_layout() {
  wire::WorkerAttach attach;
  attach.set_slot_stride(64 << 10);
  attach.set_batch_size(8);
  auto* image = attach.add_tensors();
  image->set_name("image");
  image->set_offset(256);
  image->set_sample_bytes(784);
  auto* index = attach.add_tensors();
  index->set_name("index");
  index->set_offset(6656);
  index->set_sample_bytes(8);
  return attach;
}

// OpenStream of dataset "fmnist" (fmnist_registry()) through pipeline fmnist_u8.
inline wire::OpenStream fmnist_u8_request(uint32_t batch_size, uint32_t depth) {
  wire::OpenStream r;
  r.set_dataset("fmnist");
  r.set_pipeline("fmnist_u8");
  r.set_batch_size(batch_size);
  r.set_depth(depth);
  return r;
}

// Debian's Fashion-MNIST test set (10,000 samples) as dataset "fmnist".
inline DatasetRegistry fmnist_registry() {
  DatasetConfig c;
  c.name = "fmnist";
  c.format = "idx";
  c.images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  c.labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  return DatasetRegistry::open_all({c});
}

}  // namespace batchd::daemon::testing
