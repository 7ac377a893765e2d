#include "workers/worker.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <map>

#include "batchd/wire/convert.h"
#include "batchd/wire/fd_passing.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/segment_layout.h"
#include "batchd/wire/shared_memory.h"
#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

namespace {

struct AttachedStream {
  wire::Mapping mapping;
  std::unique_ptr<Pipeline> pipeline;
  std::vector<uint64_t> offsets;       // pipeline tensors, then `index`
  std::vector<uint64_t> sample_bytes;  // per tensor, same order
  uint64_t slot_offset = 0, slot_stride = 0;
  uint32_t slot_count = 0, batch_size = 0;
  uint64_t seed = 0;
};

class Worker {
 public:
  Worker(int channel, const DatasetRegistry& datasets, uint32_t max_frame_bytes, WorkerProgress* progress,
         FaultInjection faults, SampleCache* cache)
      : channel_(channel),
        datasets_(datasets),
        decoder_(max_frame_bytes),
        max_frame_bytes_(max_frame_bytes),
        progress_(progress),
        sample_progress_(&progress->sample, faults),
        faults_(faults),
        cache_(cache) {}

  int run() {
    std::vector<char> buffer(1 << 16);
    std::string payload;
    for (;;) {
      auto n = wire::recv_some(channel_, buffer.data(), buffer.size(), &fds_, 4);
      if (!n.ok()) {
        spdlog::error("worker {}: channel: {}", ::getpid(), n.error().message());
        return 2;
      }
      if (*n == 0) return 0;  // the daemon closed our channel: exit quietly
      decoder_.feed(buffer.data(), *n);
      for (;;) {
        auto more = decoder_.next(&payload);
        if (!more.ok()) {
          spdlog::error("worker {}: {}", ::getpid(), more.error().message());
          return 2;
        }
        if (!*more) break;
        wire::WorkerCommand command;
        if (auto st = wire::parse_payload(payload, &command, "worker command"); !st.ok()) {
          spdlog::error("worker {}: {}", ::getpid(), st.error().message());
          return 2;
        }
        if (auto st = handle(command); !st.ok()) {
          spdlog::error("worker {}: {}", ::getpid(), st.error().message());
          return 2;
        }
      }
    }
  }

 private:
  Status handle(const wire::WorkerCommand& command) {
    switch (command.body_case()) {
      case wire::WorkerCommand::kAttach: {
        // A stream this worker cannot attach fails its tasks (with the reason); the worker itself carries on.
        const uint64_t id = command.attach().stream_id();
        if (auto st = attach(command.attach()); !st.ok()) attach_errors_.insert_or_assign(id, st.error());
        return ok_status();
      }
      case wire::WorkerCommand::kDetach:
        streams_.erase(command.detach().stream_id());
        attach_errors_.erase(command.detach().stream_id());
        return ok_status();
      case wire::WorkerCommand::kTask: return reply(run_task(command.task()));
      default: return Error(ErrorCode::kProtocol, "unknown worker command");
    }
  }

  Status attach(const wire::WorkerAttach& a) {
    if (fds_.empty()) return Error(ErrorCode::kInternal, "WorkerAttach arrived without its segment fd");
    wire::UniqueFd fd = std::move(fds_.front());
    fds_.erase(fds_.begin());
    auto dataset = datasets_.find_key(a.dataset_key());
    if (!dataset.ok()) return dataset.error();
    const CacheBinding cache{cache_, cache_hash(a.dataset_key()), a.owner_uid(), a.client_spec(),
                             faults_.crash_in_cache_fill, faults_.cache_fill_crashed};
    auto pipeline = make_pipeline(a.pipeline(), *dataset, a.pipeline_options(), a.spec(), cache);
    if (!pipeline.ok()) return pipeline.error();
    auto mapping = wire::Mapping::map(fd.get(), a.segment_bytes(), /*writable=*/true, /*populate=*/true);
    if (!mapping.ok()) return mapping.error().with_context("worker mapping stream " + std::to_string(a.stream_id()));
    AttachedStream s{std::move(mapping).value(), std::move(pipeline).value(), {}, {}, a.slot_offset(), a.slot_stride(),
                     a.slot_count(), a.batch_size(), a.seed()};
    for (const auto& t : a.tensors()) {
      s.offsets.push_back(t.offset());
      s.sample_bytes.push_back(t.sample_bytes());
    }
    streams_[a.stream_id()] = std::move(s);
    return ok_status();
  }

  wire::WorkerDone run_task(const wire::WorkerTask& task) {
    const auto start = std::chrono::steady_clock::now();
    wire::WorkerDone done;
    done.set_stream_id(task.stream_id());
    done.set_sequence(task.sequence());
    done.set_slot(task.slot());
    done.set_begin(task.begin());
    if (auto e = attach_errors_.find(task.stream_id()); e != attach_errors_.end()) {
      *done.mutable_error() = wire::to_wire(e->second);
      return done;
    }
    auto it = streams_.find(task.stream_id());
    const auto n = static_cast<size_t>(task.indices_size());
    const uint64_t batch_samples = task.batch_samples() != 0 ? task.batch_samples() : n;
    const size_t made = task.made();
    if (it == streams_.end() || task.slot() >= it->second.slot_count || batch_samples > it->second.batch_size ||
        task.begin() + n > batch_samples || made > n ||
        it->second.offsets.size() != it->second.pipeline->tensors().size() + 1) {
      *done.mutable_error() = wire::to_wire(Error(ErrorCode::kInternal, "task for an unknown stream or slot"));
      return done;
    }
    AttachedStream& s = it->second;
    char* slot = s.mapping.data() + s.slot_offset + task.slot() * s.slot_stride;
    std::span<const int64_t> indices(task.indices().data(), n);
    // Rows [begin + made, begin + n) of every tensor: the part of the chunk not in the slot yet.
    chunk_offsets_.resize(s.offsets.size());
    for (size_t i = 0; i < s.offsets.size(); ++i) {
      chunk_offsets_[i] = s.offsets[i] + (task.begin() + made) * s.sample_bytes[i];
    }
    progress_->stream_id.store(task.stream_id(), std::memory_order_relaxed);
    progress_->sequence.store(task.sequence(), std::memory_order_relaxed);
    progress_->begin.store(task.begin(), std::memory_order_relaxed);
    std::span<const uint32_t> copies;  // repeated_aug: one per index, else none (all copy 0)
    if (static_cast<size_t>(task.copies_size()) == n) {
      copies = std::span<const uint32_t>(task.copies().data(), n).subspan(made);
    }
    const BatchContext context{s.seed, task.epoch(), sample_progress_, task.batch(), copies};
    Status st = s.pipeline->run(indices.subspan(made), slot, chunk_offsets_, context);
    // Batch ops (mixup, cutmix) once the whole batch is in the slot: such streams send one task per batch.
    if (st.ok() && s.pipeline->whole_batches() && task.begin() == 0 && n == batch_samples) {
      st = s.pipeline->finish_batch(slot, s.offsets, static_cast<uint32_t>(batch_samples), context);
    }
    const int64_t failed_sample = progress_->sample.load(std::memory_order_relaxed);
    progress_->sample.store(-1, std::memory_order_relaxed);
    const StageTimes times = s.pipeline->take_stage_times();
    auto* stages = done.mutable_stages();
    stages->set_read(times.read_ns);
    stages->set_decode(times.decode_ns);
    stages->set_resize(times.resize_ns);
    stages->set_normalize(times.normalize_ns);
    stages->set_samples(n - made);
    stages->set_cache_hits(times.cache_hits);
    stages->set_cache_fills(times.cache_fills);
    stages->set_cache_uncached(times.cache_uncached);
    if (!st.ok()) {
      *done.mutable_error() = wire::to_wire(st.error());
      if (st.error().code() == ErrorCode::kDataError && failed_sample >= 0) {
        done.set_sample_failed(true);
        done.set_failed_sample(failed_sample);
      }
      return done;
    }
    // The `index` tensor, every row of the task (the rows made before keep their indices: the daemon sends them).
    std::memcpy(slot + s.offsets.back() + task.begin() * s.sample_bytes.back(), indices.data(), n * sizeof(int64_t));
    // Every chunk of a batch writes the same header (the whole batch's sample count).
    wire::SlotHeader header{wire::kSlotMagic, task.stream_id(), task.sequence(), task.epoch(), task.batch(),
                            static_cast<uint32_t>(batch_samples), 0};
    std::memcpy(slot, &header, sizeof(header));
    done.set_nanos(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count()));
    return done;
  }

  Status reply(const wire::WorkerDone& done) {
    auto frame = wire::encode_frame(done, max_frame_bytes_);
    if (!frame.ok()) return frame.error();
    return wire::send_all(channel_, frame->data(), frame->size());
  }

  int channel_;
  const DatasetRegistry& datasets_;
  wire::FrameDecoder decoder_;
  uint32_t max_frame_bytes_;
  std::vector<wire::UniqueFd> fds_;
  std::map<uint64_t, AttachedStream> streams_;
  std::map<uint64_t, Error> attach_errors_;
  std::vector<uint64_t> chunk_offsets_;  // scratch: the task's rows in each tensor
  WorkerProgress* progress_;
  SampleProgress sample_progress_;
  FaultInjection faults_;
  SampleCache* cache_;
};

}  // namespace

int run_worker(int channel_fd, const DatasetRegistry& datasets, uint32_t max_frame_bytes, WorkerProgress* progress,
               FaultInjection faults, SampleCache* cache) {
  return Worker(channel_fd, datasets, max_frame_bytes, progress, faults, cache).run();
}

}  // namespace batchd::daemon
