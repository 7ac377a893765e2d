#include "streams/stream_manager.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "batchd/wire/convert.h"
#include "batchd/wire/segment_layout.h"
#include "transforms/pipeline.h"

namespace batchd::daemon {

namespace {

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); }

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

StreamManager::StreamManager(const Config& config, const DatasetRegistry& datasets)
    : config_(config), datasets_(datasets), budget_(config.limits.max_shm_bytes) {}

Result<StreamManager::Opened> StreamManager::open(const wire::OpenStream& req, const Peer& owner,
                                                  EventSink* sink) {
  const Limits& limits = config_.limits;
  if (draining_) {
    return Error(ErrorCode::kUnavailable, "the daemon is draining (batchctl drain): it finishes the running streams "
                                          "and accepts no new ones; use another daemon or wait for its restart");
  }
  if (streams_of(owner.connection_id) >= limits.max_streams_per_connection) {
    return Error(ErrorCode::kResourceExhausted, "this connection already has " +
                                                    std::to_string(limits.max_streams_per_connection) +
                                                    " open streams (limits.max_streams_per_connection); close some");
  }
  auto dataset = datasets_.find(req.dataset());
  if (!dataset.ok()) return dataset.error();
  PipelineOptions pipeline_options;
  if (req.crop_size() != 0) pipeline_options.crop_size = req.crop_size();
  if (req.resize_size() != 0) pipeline_options.resize_size = req.resize_size();
  pipeline_options.fast_decode = !req.exact_decode();
  auto pipeline = make_pipeline(req.pipeline(), *dataset, pipeline_options);
  if (!pipeline.ok()) return pipeline.error();
  if (req.batch_size() == 0 || req.batch_size() > limits.max_batch_size) {
    return invalid("batch_size " + std::to_string(req.batch_size()) + " is out of range [1, " +
                   std::to_string(limits.max_batch_size) + "] (limits.max_batch_size)");
  }
  const uint32_t depth = req.depth() == 0 ? limits.default_depth : req.depth();
  if (depth > limits.max_depth) {
    return Error(ErrorCode::kResourceExhausted, "depth " + std::to_string(depth) + " exceeds limits.max_depth (" +
                                                    std::to_string(limits.max_depth) + ")");
  }
  const uint32_t num_epochs = req.num_epochs() == 0 ? 1 : req.num_epochs();
  if (req.world_size() > kMaxWorldSize) {
    return invalid("world_size " + std::to_string(req.world_size()) + " is over the supported " +
                   std::to_string(kMaxWorldSize) + " ranks");
  }
  SamplerOptions so{(*dataset)->size(), req.batch_size(), req.shuffle(), req.seed(),
                    req.rank(), req.world_size() == 0 ? 1u : req.world_size(), req.drop_last()};
  auto sampler = Sampler::make(so);
  if (!sampler.ok()) return sampler.error().with_context("dataset '" + req.dataset() + "'");
  if (req.start_batch() >= sampler->batches_per_epoch()) {
    return invalid("start_batch " + std::to_string(req.start_batch()) + " is past the end of the epoch (" +
                   std::to_string(sampler->batches_per_epoch()) + " batches)");
  }
  if (req.epoch() > (uint64_t{1} << 62)) return invalid("epoch is out of range");
  // The indices of one task must fit in one worker frame (varint int64: at most 10 bytes each).
  if (uint64_t{req.batch_size()} * 10 + 256 > limits.max_frame_bytes) {
    return Error(ErrorCode::kResourceExhausted,
                 "batch_size " + std::to_string(req.batch_size()) + " needs frames of up to " +
                     std::to_string(uint64_t{req.batch_size()} * 10 + 256) + " bytes, over limits.max_frame_bytes (" +
                     std::to_string(limits.max_frame_bytes) + "); lower batch_size or raise the limit");
  }

  // Layout: the pipeline's tensors, then `index`.
  std::vector<TensorDesc> tensors = (*pipeline)->tensors();
  tensors.push_back({"index", wire::INT64, {}});
  std::vector<uint64_t> sample_bytes;
  for (const auto& t : tensors) sample_bytes.push_back(t.sample_bytes());
  auto layout = wire::compute_layout(sample_bytes, req.batch_size(), depth);
  if (!layout || layout->segment_bytes > limits.max_segment_bytes) {
    return Error(ErrorCode::kResourceExhausted,
                 "a segment of " + std::to_string(depth) + " slots of " + std::to_string(req.batch_size()) +
                     " samples would exceed limits.max_segment_bytes (" + std::to_string(limits.max_segment_bytes) +
                     " bytes); lower batch_size or depth");
  }

  const wire::SharingStrategy strategy =
      req.strategy() == wire::STRATEGY_DEFAULT ? config_.shm_strategy : req.strategy();
  if (strategy != wire::FILE_DESCRIPTOR && strategy != wire::FILE_SYSTEM) return invalid("unknown sharing strategy");
  // What the client is told about the stream (a dry run stops here: the sizes for len(loader), nothing allocated).
  wire::StreamOpened opened;
  opened.set_strategy(strategy);
  opened.set_segment_bytes(layout->segment_bytes);
  opened.set_slot_count(depth);
  opened.set_slot_offset(layout->slot_offset);
  opened.set_slot_stride(layout->slot_stride);
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto* t = opened.add_tensors();
    t->set_name(tensors[i].name);
    t->set_dtype(tensors[i].dtype);
    for (int64_t d : tensors[i].sample_shape) t->add_sample_shape(d);
    t->set_offset(layout->tensor_offsets[i]);
    t->set_sample_bytes(sample_bytes[i]);
  }
  opened.set_dataset_size((*dataset)->size());
  opened.set_samples_per_epoch(sampler->samples_per_epoch());
  opened.set_batches_per_epoch(sampler->batches_per_epoch());
  opened.set_batch_size(req.batch_size());
  opened.set_first_epoch(req.epoch());
  opened.set_num_epochs(num_epochs);
  opened.set_start_batch(req.start_batch());
  if (req.dry_run()) return Opened{opened, {}};
  BATCHD_RETURN_IF_ERROR(budget_.admit(layout->segment_bytes, strategy));
  const uint64_t id = next_id_++;
  const std::string name = "batchd." + std::to_string(::getpid()) + "." + std::to_string(id);
  auto memory = strategy == wire::FILE_DESCRIPTOR
                    ? wire::SharedMemory::create_anonymous(name, layout->segment_bytes)
                    : wire::SharedMemory::create_named(name, layout->segment_bytes,
                                                       0660);
  if (!memory.ok()) return memory.error();
  {
    // Only the header page is mapped here, and only for as long as it takes to write it: a long-lived daemon
    // mapping would be inherited by every worker forked later (a respawn) and outlive the stream there. Every
    // page is already allocated (posix_fallocate); workers and the client prefault their own mappings.
    auto header_page = wire::Mapping::map(memory->fd(), wire::kPageBytes, true, /*populate=*/false);
    if (!header_page.ok()) return header_page.error().with_context("stream " + std::to_string(id));
    wire::SegmentHeader header{wire::kSegmentMagic, wire::kLayoutVersion, depth, id, layout->segment_bytes,
                               layout->slot_offset, layout->slot_stride, ::getpid(), 0, unix_now()};
    std::memcpy(header_page->data(), &header, sizeof(header));
  }

  opened.set_stream_id(id);
  opened.set_segment_name(strategy == wire::FILE_SYSTEM ? name : "");
  opened.set_fd_attached(strategy == wire::FILE_DESCRIPTOR);

  wire::WorkerAttach attach;
  attach.set_stream_id(id);
  attach.set_dataset(req.dataset());
  attach.set_dataset_key(datasets_.key(req.dataset()));
  attach.set_pipeline(req.pipeline());
  attach.set_segment_bytes(layout->segment_bytes);
  attach.set_slot_offset(layout->slot_offset);
  attach.set_slot_stride(layout->slot_stride);
  attach.set_slot_count(depth);
  attach.set_batch_size(req.batch_size());
  *attach.mutable_tensors() = opened.tensors();
  attach.set_seed(req.seed());
  attach.set_crop_size(pipeline_options.crop_size);
  attach.set_resize_size(pipeline_options.resize_size);
  attach.set_exact_decode(req.exact_decode());

  wire::UniqueFd client_fd;
  if (strategy == wire::FILE_DESCRIPTOR) {
    // The client may map the segment (read-write only if it asked), never resize it (the memfd is sealed).
    auto fd = memory->reopen(req.writable());
    if (!fd.ok()) return fd.error();
    client_fd = std::move(fd).value();
  }
  auto stream = std::make_unique<Stream>(id, owner, req, std::move(sampler).value(), std::move(memory).value(),
                                         std::move(attach), opened);
  streams_[id] = Entry{std::move(stream), sink};
  budget_.add(layout->segment_bytes);
  spdlog::info("stream {} opened: dataset={} pipeline={} batch_size={} depth={} strategy={} segment={} bytes "
               "client pid={} uid={}",
               id, req.dataset(), req.pipeline(), req.batch_size(), depth, strategy_name(strategy),
               layout->segment_bytes, owner.pid, owner.uid);
  pump();
  return Opened{opened, std::move(client_fd)};
}

Status StreamManager::close(uint64_t stream_id, uint64_t connection_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || it->second.stream->owner().connection_id != connection_id) {
    return invalid("no stream " + std::to_string(stream_id) + " is open on this connection");
  }
  erase(it);
  return ok_status();
}

Status StreamManager::release(uint64_t stream_id, uint64_t sequence, uint64_t connection_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || it->second.stream->owner().connection_id != connection_id) {
    // A release can cross a CloseStream on the wire (a Batch destroyed on another thread): closing reclaimed
    // every slot already, so there is nothing to do.
    spdlog::debug("release of batch {} of stream {}, which is not open on this connection: ignored", sequence,
                  stream_id);
    return ok_status();
  }
  BATCHD_RETURN_IF_ERROR(it->second.stream->release(sequence));
  pump();
  return ok_status();
}

void StreamManager::close_all_of(uint64_t connection_id) {
  for (auto it = streams_.begin(); it != streams_.end();) {
    auto next = std::next(it);
    if (it->second.stream->owner().connection_id == connection_id) erase(it);
    it = next;
  }
}

void StreamManager::shutdown(const std::string& reason) {
  for (auto& [id, entry] : streams_) {
    if (entry.stream->state() == Stream::State::kRunning) fail(entry, Error(ErrorCode::kUnavailable, reason));
  }
  while (!streams_.empty()) erase(streams_.begin());
}

std::set<std::string> StreamManager::dataset_keys_in_use() const {
  std::set<std::string> keys;
  for (const auto& [id, entry] : streams_) keys.insert(entry.stream->attach().dataset_key());
  return keys;
}

size_t StreamManager::streams_of(uint64_t connection_id) const {
  size_t n = 0;
  for (const auto& [id, entry] : streams_) n += entry.stream->owner().connection_id == connection_id;
  return n;
}

void StreamManager::erase(std::map<uint64_t, Entry>::iterator it) {
  const uint64_t id = it->first;
  if (pool_ != nullptr) pool_->detach_stream(id);
  std::erase_if(redo_, [id](const wire::WorkerTask& t) { return t.stream_id() == id; });
  budget_.remove(it->second.stream->opened().segment_bytes());
  spdlog::info("stream {} closed (segment released)", id);
  streams_.erase(it);  // unmaps; unlinks the /dev/shm name (file_system); the memfd dies with the last mapping
}

void StreamManager::on_done(const wire::WorkerDone& done, wire::WorkerTask task) {
  auto it = streams_.find(done.stream_id());
  if (it != streams_.end()) {
    Entry& entry = it->second;
    entry.stream->add_stage_times(done.stages());
    if (done.has_error() && done.sample_failed() && entry.stream->running()) {
      // One bad sample: the stream's on_error policy decides (fail, or replace it and make the batch again).
      auto redo = entry.stream->after_bad_sample(std::move(task), done.failed_sample(), wire::from_wire(done.error()));
      if (redo.ok()) {
        redo_.push_front(std::move(redo).value());
      } else {
        entry.stream->fail_at(done.sequence(), redo.error());
        deliver(entry);
      }
    } else if (done.has_error()) {
      entry.stream->fail_at(done.sequence(), wire::from_wire(done.error()));
      deliver(entry);
    } else {
      entry.stream->on_done(done.sequence(), done.slot());
      deliver(entry);
    }
  }
  pump();
}

void StreamManager::on_lost(std::optional<wire::WorkerTask> task, int64_t culprit, const std::string& cause) {
  if (task) {
    ++batches_redone_;
    auto it = streams_.find(task->stream_id());
    if (it != streams_.end() && it->second.stream->running()) {
      const uint64_t sequence = task->sequence();
      auto redo = it->second.stream->after_worker_death(std::move(*task), culprit, cause);
      if (redo.ok()) {
        redo_.push_front(std::move(redo).value());
      } else {
        it->second.stream->fail_at(sequence, redo.error());
        deliver(it->second);
      }
    }
  }
  pump();
}

void StreamManager::deliver(Entry& entry) {
  for (const auto& ready : entry.stream->take_deliverable()) {
    wire::Reply event;
    *event.mutable_batch_ready() = ready;
    entry.sink->send_event(event);
  }
  if (auto error = entry.stream->due_failure()) {
    fail(entry, *error);
    return;
  }
  if (entry.stream->state() == Stream::State::kRunning && entry.stream->all_delivered()) {
    entry.stream->mark_ended();
    wire::Reply event;
    event.mutable_stream_end()->set_stream_id(entry.stream->id());
    entry.sink->send_event(event);
  }
}

void StreamManager::fail(Entry& entry, const Error& error) {
  if (!entry.stream->running()) return;  // already ended or failed: one StreamFailed per stream
  spdlog::warn("stream {} failed: {}", entry.stream->id(), error.message());
  entry.stream->mark_failed();
  wire::Reply event;
  auto* failed = event.mutable_stream_failed();
  failed->set_stream_id(entry.stream->id());
  *failed->mutable_error() = wire::to_wire(error);
  entry.sink->send_event(event);
}

void StreamManager::pump() {
  if (pool_ == nullptr) return;
  while (auto w = pool_->idle_worker()) {
    if (!redo_.empty()) {
      wire::WorkerTask task = std::move(redo_.front());
      redo_.pop_front();
      auto it = streams_.find(task.stream_id());
      if (it == streams_.end() || !it->second.stream->running()) continue;
      pool_->assign(*w, task, it->second.stream->attach(), it->second.stream->segment_fd());
      continue;
    }
    // Round-robin: the first stream after the last one served that has work and a free slot.
    std::optional<wire::WorkerTask> task;
    Stream* chosen = nullptr;
    auto start = streams_.upper_bound(last_served_);
    for (size_t i = 0; i < streams_.size() && !task; ++i, ++start) {
      if (start == streams_.end()) start = streams_.begin();
      task = start->second.stream->next_task();
      if (task) chosen = start->second.stream.get();
    }
    if (!task) return;
    last_served_ = chosen->id();
    pool_->assign(*w, *task, chosen->attach(), chosen->segment_fd());
  }
}

void StreamManager::fill_status(wire::StatusReply* status) const {
  for (const auto& [id, entry] : streams_) {
    *status->add_streams() = entry.stream->info();
    *status->add_segments() = entry.stream->segment_info();
  }
}

}  // namespace batchd::daemon
