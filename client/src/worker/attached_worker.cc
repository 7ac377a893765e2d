// attached_worker.cc — batchd/worker.h: the attachment (connect, AttachWorker, map the segment and the progress
// page), the reader thread (tasks queued for next_task; a must_exit detach, a broken connection or a lost parent
// end the process), and the rows a task may write.
#include "batchd/worker.h"

#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "batchd/wire/convert.h"
#include "batchd/wire/segment_layout.h"
#include "batchd/wire/shared_memory.h"
#include "batchd/wire/utf8.h"
#include "batchd/wire/worker_progress.h"
#include "core/client_core.h"
#include "core/wire_mapping.h"

namespace batchd {
namespace detail {

namespace {
constexpr std::chrono::milliseconds kParentCheck{200};
constexpr size_t kMaxMessageBytes = 4096;  // of a failed sample's message (the daemon cuts longer ones too)

Error malformed(const std::string& why) {
  return Error(ErrorCode::kProtocol, "the daemon's worker attachment is malformed: " + why +
                                         "; are client and daemon the same batchd version?");
}
}  // namespace

class AttachedWorkerCore final {
 public:
  AttachedWorkerCore(std::shared_ptr<ClientCore> client, wire::WorkerAttach attach, uint32_t worker,
                     wire::Mapping segment, wire::Mapping page, AttachedWorker::Options options)
      : client_(std::move(client)),
        attach_(std::move(attach)),
        worker_(worker),
        segment_(std::move(segment)),
        page_(std::move(page)),
        options_(std::move(options)) {
    for (int i = 0; i + 1 < attach_.tensors_size(); ++i) {  // the last tensor is "index"
      const auto& t = attach_.tensors(i);
      fields_.push_back({t.name(), from_wire(t.dtype()).value_or(DType::kUInt8),
                         {t.sample_shape().begin(), t.sample_shape().end()}, t.sample_bytes()});
    }
    reader_ = std::thread([this] { read_events(); });
  }

  ~AttachedWorkerCore() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    reader_.join();  // it looks at stopping_ at least every kParentCheck
  }

  // Checks the attachment's layout against the mapped segment before any row is handed out.
  static Status check(const wire::WorkerAttach& a, size_t mapped) {
    if (a.tensors_size() < 2 || a.tensors(a.tensors_size() - 1).name() != "index") return malformed("no index tensor");
    if (a.slot_count() == 0 || a.slot_stride() == 0 || a.batch_size() == 0) return malformed("no slots");
    // Every sum and product checked for overflow (segment_layout.h): a layout whose sizes wrap would place rows
    // outside the slot.
    if (!wire::fits_within(a.slot_offset(), a.slot_stride(), a.slot_count(), mapped)) {
      return malformed("slots past the segment");
    }
    for (const auto& t : a.tensors()) {
      const uint64_t item = wire::dtype_size(t.dtype());
      const auto bytes = wire::checked_sample_bytes(item, {t.sample_shape().begin(), t.sample_shape().end()});
      if (item == 0 || !bytes || *bytes != t.sample_bytes() || t.offset() < wire::kSlotHeaderBytes ||
          !wire::fits_within(t.offset(), *bytes, a.batch_size(), a.slot_stride())) {
        return malformed("tensor '" + t.name() + "' does not fit its slot");
      }
    }
    return ok_status();
  }

  const std::vector<AttachedWorker::Field>& fields() const { return fields_; }
  const wire::WorkerAttach& attach() const { return attach_; }
  uint32_t worker() const { return worker_; }

  Result<std::optional<AttachedWorker::Task>> next_task(std::optional<std::chrono::milliseconds> timeout) {
    std::unique_lock lock(mu_);
    auto ready = [&] { return !tasks_.empty() || closed_ || broken_; };
    if (timeout) {
      if (!arrived_.wait_for(lock, *timeout, ready)) {
        return Error(ErrorCode::kDeadlineExceeded, "no task within the timeout");
      }
    } else {
      arrived_.wait(lock, ready);
    }
    if (!tasks_.empty()) {
      AttachedWorker::Task t = std::move(tasks_.front());
      tasks_.pop_front();
      return std::optional<AttachedWorker::Task>(std::move(t));
    }
    if (broken_) return *broken_;
    return std::optional<AttachedWorker::Task>();  // the stream was closed
  }

  void* row(const AttachedWorker::Task& task, size_t field, uint32_t position) const {
    if (field >= fields_.size() || task.slot >= attach_.slot_count() || position < task.begin ||
        position - task.begin >= task.indices.size() || position >= attach_.batch_size()) {
      return nullptr;
    }
    const auto& t = attach_.tensors(static_cast<int>(field));
    return slot(task.slot) + t.offset() + uint64_t{position} * t.sample_bytes();
  }

  void set_progress(const AttachedWorker::Task& task, int64_t sample) {
    auto* p = reinterpret_cast<wire::WorkerProgress*>(page_.data());
    p->stream_id.store(task.stream_id, std::memory_order_relaxed);
    p->sequence.store(task.sequence, std::memory_order_relaxed);
    p->begin.store(task.begin, std::memory_order_relaxed);
    p->sample.store(sample, std::memory_order_release);
  }

  Status done(const AttachedWorker::Task& task, std::chrono::nanoseconds spent, std::chrono::nanoseconds dataset,
              std::chrono::nanoseconds collate, const std::vector<uint64_t>& field_bytes) {
    if (task.slot >= attach_.slot_count() || task.indices.empty() ||
        task.begin + task.indices.size() > attach_.batch_size()) {
      return Error(ErrorCode::kInvalidArgument, "done() of a task this worker was not given");
    }
    const uint64_t rows = task.indices.size();
    bool fits = field_bytes.empty() || field_bytes.size() == fields_.size();
    for (size_t i = 0; fits && i < field_bytes.size(); ++i) fits = field_bytes[i] <= rows * fields_[i].sample_bytes;
    if (!fits) {
      return Error(ErrorCode::kInvalidArgument, "done(): field_bytes needs one entry per field (" +
                                                    std::to_string(fields_.size()) + "), each within the task's rows");
    }
    const auto& index = attach_.tensors(attach_.tensors_size() - 1);
    char* s = slot(task.slot);
    std::memcpy(s + index.offset() + uint64_t{task.begin} * sizeof(int64_t), task.indices.data(),
                task.indices.size() * sizeof(int64_t));
    const wire::SlotHeader header{wire::kSlotMagic, task.stream_id, task.sequence, task.epoch, task.batch,
                                  task.batch_samples, 0};
    std::memcpy(s, &header, sizeof(header));
    set_progress(task, -1);
    wire::Request request;
    auto* d = request.mutable_worker_done();
    answer(task, d);
    auto written = [d](uint64_t offset, uint64_t bytes) {  // checked by the daemon: daemon/workers/slot_extents.h
      auto* e = d->add_written();
      e->set_offset(offset);
      e->set_bytes(bytes);
    };
    written(0, sizeof(header));
    written(index.offset() + uint64_t{task.begin} * sizeof(int64_t), rows * sizeof(int64_t));
    for (size_t i = 0; i < fields_.size(); ++i) {
      const uint64_t bytes = field_bytes.empty() ? rows * fields_[i].sample_bytes : field_bytes[i];
      const uint64_t first = attach_.tensors(static_cast<int>(i)).offset() + task.begin * fields_[i].sample_bytes;
      if (bytes > 0) written(first, bytes);
    }
    d->set_nanos(static_cast<uint64_t>(spent.count()));
    d->mutable_stages()->set_samples(task.indices.size() - task.made);
    d->mutable_stages()->set_read(static_cast<uint64_t>(std::max<int64_t>(0, dataset.count())));
    d->mutable_stages()->set_normalize(static_cast<uint64_t>(std::max<int64_t>(0, collate.count())));
    return client_->send(request);
  }

  Status fail_sample(const AttachedWorker::Task& task, int64_t sample, const std::string& message) {
    set_progress(task, -1);
    wire::Request request;
    auto* d = request.mutable_worker_done();
    answer(task, d);
    d->mutable_error()->set_code(wire::DATA_ERROR);
    // Valid UTF-8 whatever the caller passed, and cut at a character boundary: the daemon refuses a request that
    // is not (proto3 strings), and would drop this worker instead of reporting the sample.
    d->mutable_error()->set_message(wire::bounded_utf8(message, kMaxMessageBytes));
    d->set_sample_failed(true);
    d->set_failed_sample(sample);
    return client_->send(request);
  }

 private:
  char* slot(uint32_t s) const { return segment_.data() + attach_.slot_offset() + uint64_t{s} * attach_.slot_stride(); }
  static void answer(const AttachedWorker::Task& task, wire::WorkerDone* d) {
    d->set_stream_id(task.stream_id);
    d->set_sequence(task.sequence);
    d->set_slot(task.slot);
    d->set_begin(task.begin);
  }

  // The reader thread: files tasks; exits the process when told to (see worker.h).
  void read_events() {
    for (;;) {
      if (options_.parent_pid > 0 && ::getppid() != options_.parent_pid && options_.exit_on_detach) ::_exit(AttachedWorker::kExitCode);
      auto event = client_->next_worker_event(Deadline::after(kParentCheck));
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (!event.ok()) {
        if (event.error().code() == ErrorCode::kDeadlineExceeded) continue;
        if (options_.exit_on_detach) ::_exit(AttachedWorker::kExitCode);
        broken_ = event.error();
        arrived_.notify_all();
        return;
      }
      const wire::Reply& r = event->reply;
      if (r.has_worker_task()) {
        const auto& w = r.worker_task();
        AttachedWorker::Task t;
        t.stream_id = w.stream_id();
        t.sequence = w.sequence();
        t.epoch = w.epoch();
        t.batch = w.batch();
        t.slot = w.slot();
        t.begin = w.begin();
        t.made = w.made();
        t.attempt = w.attempt();
        t.indices.assign(w.indices().begin(), w.indices().end());
        t.copies.assign(w.copies().begin(), w.copies().end());
        t.batch_samples = w.batch_samples() != 0 ? w.batch_samples() : w.begin() + w.indices_size();
        tasks_.push_back(std::move(t));
      } else if (r.has_worker_detach()) {
        if (r.worker_detach().must_exit() && options_.exit_on_detach) ::_exit(AttachedWorker::kExitCode);
        if (r.worker_detach().must_exit()) {
          broken_ = Error(ErrorCode::kUnavailable, "detached by the daemon: " + r.worker_detach().reason());
        }
        closed_ = true;
        tasks_.clear();  // tasks of a closed stream: the daemon has dropped them, making them would only delay
        arrived_.notify_all();
        return;
      }
      arrived_.notify_all();
    }
  }

  std::shared_ptr<ClientCore> client_;
  const wire::WorkerAttach attach_;
  const uint32_t worker_;
  wire::Mapping segment_, page_;
  const AttachedWorker::Options options_;
  std::vector<AttachedWorker::Field> fields_;
  mutable std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<AttachedWorker::Task> tasks_;
  bool closed_ = false, stopping_ = false;
  std::optional<Error> broken_;
  std::thread reader_;
};

}  // namespace detail

Result<std::unique_ptr<AttachedWorker>> AttachedWorker::attach(uint64_t stream_id, const Options& options) {
  auto client = detail::ClientCore::connect(options.connect);
  if (!client.ok()) return client.error();
  wire::Request request;
  request.mutable_attach_worker()->set_stream_id(stream_id);
  request.mutable_attach_worker()->set_worker(options.worker);
  auto attached = (*client)->call(request);
  if (!attached.ok()) return attached.error();
  if (!attached->reply.has_worker_attached() || !attached->fd.valid()) return detail::malformed("no segment");
  const wire::WorkerAttach& a = attached->reply.worker_attached().attach();
  struct stat st {};
  if (::fstat(attached->fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < a.segment_bytes()) {
    return detail::malformed("the segment is smaller than announced");
  }
  auto segment = wire::Mapping::map(attached->fd.get(), a.segment_bytes(), /*writable=*/true, /*populate=*/true);
  if (!segment.ok()) return segment.error().with_context("mapping the segment of stream " + std::to_string(stream_id));
  BATCHD_RETURN_IF_ERROR(detail::AttachedWorkerCore::check(a, segment->size()));
  auto page_event = (*client)->next_worker_event(detail::Deadline::after(std::chrono::seconds(30)));
  if (!page_event.ok()) return page_event.error();
  if (!page_event->reply.progress_page() || !page_event->fd.valid()) return detail::malformed("no progress page");
  auto page = wire::Mapping::map(page_event->fd.get(), sizeof(wire::WorkerProgress), true, false);
  if (!page.ok()) return page.error();
  auto core = std::make_unique<detail::AttachedWorkerCore>(std::move(client).value(), a,
                                                           attached->reply.worker_attached().worker(),
                                                           std::move(segment).value(), std::move(page).value(),
                                                           options);
  return std::unique_ptr<AttachedWorker>(new AttachedWorker(std::move(core)));
}

AttachedWorker::AttachedWorker(std::unique_ptr<detail::AttachedWorkerCore> core) : core_(std::move(core)) {}
AttachedWorker::~AttachedWorker() = default;

const std::vector<AttachedWorker::Field>& AttachedWorker::fields() const { return core_->fields(); }
uint32_t AttachedWorker::worker() const { return core_->worker(); }
uint64_t AttachedWorker::seed() const { return core_->attach().seed(); }
uint32_t AttachedWorker::batch_size() const { return core_->attach().batch_size(); }
uint64_t AttachedWorker::stream_id() const { return core_->attach().stream_id(); }
Result<std::optional<AttachedWorker::Task>> AttachedWorker::next_task(std::optional<std::chrono::milliseconds> t) {
  return core_->next_task(t);
}
void* AttachedWorker::row(const Task& task, size_t field, uint32_t position) const {
  return core_->row(task, field, position);
}
void AttachedWorker::set_progress(const Task& task, int64_t sample) { core_->set_progress(task, sample); }
Status AttachedWorker::done(const Task& task, std::chrono::nanoseconds spent, std::chrono::nanoseconds dataset,
                            std::chrono::nanoseconds collate, const std::vector<uint64_t>& field_bytes) {
  return core_->done(task, spent, dataset, collate, field_bytes);
}
Status AttachedWorker::fail_sample(const Task& task, int64_t sample, const std::string& message) {
  return core_->fail_sample(task, sample, message);
}

}  // namespace batchd
