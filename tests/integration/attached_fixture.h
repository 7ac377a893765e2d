// attached_fixture.h — helpers for the tests of attached workers (a trainer's own Dataset, OpenStream.external): the
// trainer's stream through the C++ client, well-behaved workers (batchd::AttachedWorker on threads of the test, with
// exit_on_detach off), and hostile or careless ones that speak raw frames (AttachWorker, WorkerTask, WorkerDone).
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "batchd/wire/segment_layout.h"
#include "batchd/wire/worker_progress.h"
#include "batchd/worker.h"
#include "daemon_fixture.h"
#include "other_user.h"

namespace batchd::testing {

// An external stream of `size` samples of one field "x" (float32 [4]), made by `workers` attached workers.
inline StreamOptions external_options(uint64_t size, uint32_t batch_size, uint32_t workers) {
  StreamOptions o;
  o.batch_size = batch_size;
  o.external.size = size;
  o.external.fields = {{"x", DType::kFloat32, {4}}};
  o.external.workers = workers;
  o.external.name = "HostileTest";
  return o;
}

// The OpenStream of external_options() (no shuffle), as a raw connection sends it (request id 1).
inline wire::Request external_open_request(uint64_t size, uint32_t batch_size, uint32_t workers,
                                           wire::SharingStrategy strategy = wire::STRATEGY_DEFAULT) {
  wire::Request open;
  open.set_request_id(1);
  auto* o = open.mutable_open_stream();
  o->set_batch_size(batch_size);
  o->set_strategy(strategy);
  o->mutable_external()->set_size(size);
  o->mutable_external()->set_workers(workers);
  auto* f = o->mutable_external()->add_fields();
  f->set_name("x");
  f->set_dtype(wire::FLOAT32);
  f->add_sample_shape(4);
  return open;
}

// Opens that stream on a raw trainer connection; its id (0, and a test failure, if refused). The segment fd that
// comes with the reply (file_descriptor strategy) goes to *fds if given.
inline uint64_t raw_open_external(RawConnection& trainer, uint64_t size, uint32_t batch_size, uint32_t workers,
                                  wire::SharingStrategy strategy = wire::STRATEGY_DEFAULT,
                                  std::vector<wire::UniqueFd>* fds = nullptr) {
  trainer.send_request(external_open_request(size, batch_size, workers, strategy));
  auto opened = trainer.read_reply(fds);
  EXPECT_TRUE(opened && opened->has_stream_opened()) << (opened ? opened->ShortDebugString() : "EOF");
  return opened && opened->has_stream_opened() ? opened->stream_opened().stream_id() : 0;
}

// A daemon with a test config (other_user.h's write_test_config: fashion-mnist-test and `extra`).
inline tools::SpawnedDaemon start_daemon_with(const std::string& name, const std::string& extra) {
  return start_daemon("", 2, {"--config", write_test_config(name, extra)});
}

// An AttachWorker request (request id `rid`).
inline wire::Request attach_request(uint64_t stream_id, uint64_t rid = 1) {
  wire::Request r;
  r.set_request_id(rid);
  r.mutable_attach_worker()->set_stream_id(stream_id);
  return r;
}

// What a raw AttachWorker got: the reply (worker_attached, or an error), and with worker_attached the segment fd
// (on the reply) and the progress page fd (on the progress_page event that follows it).
struct RawAttachment {
  wire::Reply reply;
  wire::UniqueFd segment, page;
  bool attached() const { return reply.has_worker_attached(); }
};
inline RawAttachment raw_attach(RawConnection& c, uint64_t stream_id) {
  RawAttachment a;
  c.send_request(attach_request(stream_id));
  std::vector<wire::UniqueFd> fds;
  auto reply = c.read_reply(&fds);
  EXPECT_TRUE(reply.has_value()) << "no reply to AttachWorker";
  if (!reply) return a;
  a.reply = *reply;
  if (!a.attached()) return a;
  EXPECT_EQ(fds.size(), 1u) << "WorkerAttached carries the segment fd";
  if (!fds.empty()) a.segment = std::move(fds[0]);
  std::vector<wire::UniqueFd> page_fds;
  auto page = c.read_reply(&page_fds);
  EXPECT_TRUE(page && page->progress_page() && page_fds.size() == 1) << "no progress_page event after the reply";
  if (!page_fds.empty()) a.page = std::move(page_fds[0]);
  return a;
}

// The next WorkerTask event (nullopt at EOF, at the 5 s read timeout, or on any other frame, kept in *other).
inline std::optional<wire::WorkerTask> raw_next_task(RawConnection& c, wire::Reply* other = nullptr) {
  auto r = c.read_reply();
  if (!r) return std::nullopt;
  if (r->has_worker_task()) return r->worker_task();
  if (other != nullptr) *other = *r;
  return std::nullopt;
}

// The WorkerDone that answers `task` (no error).
inline wire::Request done_for(const wire::WorkerTask& task) {
  wire::Request r;
  auto* d = r.mutable_worker_done();
  d->set_stream_id(task.stream_id());
  d->set_sequence(task.sequence());
  d->set_slot(task.slot());
  d->set_begin(task.begin());
  auto* header = d->add_written();  // what it wrote (WorkerDone.written): the slot header
  header->set_offset(0);
  header->set_bytes(sizeof(wire::SlotHeader));
  return r;
}

// "" if the next frames on `c` are a WorkerDetach with must_exit, then EOF; else what came instead.
inline std::string expect_must_exit_then_eof(RawConnection& c) {
  auto r = c.read_reply();
  if (!r) return "EOF or timeout instead of a WorkerDetach";
  if (!r->has_worker_detach()) return "a frame other than WorkerDetach: " + r->ShortDebugString();
  if (!r->worker_detach().must_exit()) return "a detach without must_exit: " + r->ShortDebugString();
  if (auto more = c.read_reply()) return "a frame after the detach: " + more->ShortDebugString();
  return "";
}

// How a raw trainer's stream went: the sequences delivered, in order, and "" if it reached StreamEnd, else why not.
struct RawStreamOutcome {
  std::vector<uint64_t> delivered;
  std::string error;
};
// Reads `trainer`'s events to the StreamEnd of `stream_id`, releasing each batch (a raw client holds its slots).
inline RawStreamOutcome read_raw_stream(RawConnection& trainer, uint64_t stream_id) {
  RawStreamOutcome out;
  for (;;) {
    auto event = trainer.read_reply();
    if (!event) return {out.delivered, "the stream did not end (EOF or 5 s without an event)"};
    if (event->has_stream_failed()) return {out.delivered, event->stream_failed().error().message()};
    if (event->has_stream_end()) return out;
    if (!event->has_batch_ready()) continue;
    out.delivered.push_back(event->batch_ready().sequence());
    wire::Request release;
    release.mutable_release()->set_stream_id(stream_id);
    release.mutable_release()->set_sequence(event->batch_ready().sequence());
    trainer.send_request(release);
  }
}

// The progress page of a raw attachment, mapped read-write (what a worker writes its claims into).
struct MappedPage {
  void* p = MAP_FAILED;
  explicit MappedPage(int fd) { p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); }
  ~MappedPage() {
    if (p != MAP_FAILED) ::munmap(p, 4096);
  }
  wire::WorkerProgress* get() const { return p == MAP_FAILED ? nullptr : static_cast<wire::WorkerProgress*>(p); }
};

// `n` well-behaved workers on threads of this process (batchd::AttachedWorker, exit_on_detach off): each writes
// x = its index in every row of its task, then done(). They stop when the stream is closed, or at destruction.
class GoodWorkers {
 public:
  GoodWorkers(const std::string& socket, uint64_t stream_id, int n) {
    for (int i = 0; i < n; ++i) {
      AttachedWorker::Options options;
      options.connect.socket_path = socket;
      options.exit_on_detach = false;
      auto w = AttachedWorker::attach(stream_id, options);
      if (!w.ok()) {
        ADD_FAILURE() << "a good worker could not attach: " << w.error().message();
        continue;
      }
      threads_.emplace_back([this, w = std::shared_ptr<AttachedWorker>(std::move(w).value())] { run(*w); });
    }
  }
  ~GoodWorkers() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  uint64_t tasks_done() const { return done_; }

 private:
  void run(AttachedWorker& w) {
    while (!stop_) {
      auto t = w.next_task(std::chrono::milliseconds(100));
      if (!t.ok() && t.error().code() == ErrorCode::kDeadlineExceeded) continue;
      if (!t.ok() || !*t) return;
      const AttachedWorker::Task& task = **t;
      for (uint32_t p = task.begin + task.made; p < task.begin + task.indices.size(); ++p) {
        const int64_t index = task.indices[p - task.begin];
        w.set_progress(task, index);
        auto* row = static_cast<float*>(w.row(task, 0, p));
        for (int k = 0; k < 4; ++k) row[k] = static_cast<float>(index);
      }
      if (!w.done(task).ok()) return;
      ++done_;
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> done_{0};
  std::vector<std::thread> threads_;
};

// Reads `stream` to its end within `limit`: "" if each of its `epochs` epochs held every one of `size` indices
// exactly once and no batch had a skipped sample (on_error=skip), else what went wrong.
inline std::string read_exactly_once(Stream& stream, uint64_t size, uint32_t epochs = 1,
                                     std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + limit;
  std::vector<std::multiset<int64_t>> seen(epochs);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return "the stream did not end within " + std::to_string(limit.count()) + " ms";
    auto batch = stream.next(left);
    if (!batch.ok()) return batch.error().message();
    if (!*batch) break;
    const Batch& b = **batch;
    if (b.epoch() >= epochs) return "unexpected epoch " + std::to_string(b.epoch());
    if (b.skipped() != 0) return "batch " + std::to_string(b.sequence()) + " skipped " + std::to_string(b.skipped());
    const Tensor* index = b.find("index");
    for (int64_t i = 0; i < index->numel(); ++i) seen[b.epoch()].insert(index->data_as<int64_t>()[i]);
  }
  for (const auto& e : seen) {
    if (e.size() != size || std::set<int64_t>(e.begin(), e.end()).size() != size) {
      return "an epoch of " + std::to_string(e.size()) + " samples is not exactly-once";
    }
  }
  return "";
}

}  // namespace batchd::testing
