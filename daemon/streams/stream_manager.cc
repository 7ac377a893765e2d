#include "streams/stream_manager.h"

#include <spdlog/spdlog.h>

#include "batchd/wire/convert.h"

namespace batchd::daemon {

StreamManager::StreamManager(const Config& config, const DatasetRegistry& datasets, Workers& workers,
                             SegmentInstance instance)
    : config_(config),
      datasets_(datasets),
      segments_(std::move(instance), config.limits.max_shm_bytes),
      scheduler_(workers) {}

PlanContext StreamManager::plan_context(uint64_t connection_id) const {
  return PlanContext{config_.limits, config_.shm_strategy, draining_, streams_of(connection_id)};
}

Result<StreamManager::Opened> StreamManager::open(const wire::OpenStream& req, const Peer& owner,
                                                  EventSink* sink) {
  auto planned = plan(req, plan_context(owner.connection_id), datasets_);
  if (!planned.ok()) return planned.error();
  if (planned->dry_run) return Opened{planned->opened, {}};  // the sizes for len(loader); nothing allocated
  auto segment = segments_.create(&*planned, owner.uid);
  if (!segment.ok()) return segment.error();
  wire::UniqueFd client_fd;
  if (planned->opened.strategy() == wire::FILE_DESCRIPTOR) {
    // The client may map the segment (read-write only if it asked), never resize it (the memfd is sealed).
    auto fd = segment->client_fd(planned->writable);
    if (!fd.ok()) return fd.error();
    client_fd = std::move(fd).value();
  }
  wire::StreamOpened reply = planned->opened;
  const ChunkPolicy chunks{static_cast<uint32_t>(scheduler_.workers().size()), config_.min_chunk_us};
  auto stream = std::make_unique<Stream>(owner, std::move(planned).value(), std::move(segment).value(), chunks);
  const uint64_t id = stream->id();
  spdlog::info("stream {} opened: dataset={} pipeline={} batch_size={} depth={} strategy={} segment={} bytes "
               "client pid={} uid={}",
               id, req.dataset(), req.pipeline(), reply.batch_size(), reply.slot_count(),
               strategy_name(reply.strategy()), reply.segment_bytes(), owner.pid, owner.uid);
  scheduler_.add(stream.get());
  streams_[id] = Entry{std::move(stream), sink};
  scheduler_.pump();
  return Opened{std::move(reply), std::move(client_fd)};
}

Status StreamManager::close(uint64_t stream_id, uint64_t connection_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || it->second.stream->owner().connection_id != connection_id) {
    return Error(ErrorCode::kInvalidArgument, "no stream " + std::to_string(stream_id) + " is open on this connection");
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
  scheduler_.pump();
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
    if (entry.stream->running()) fail(entry, Error(ErrorCode::kUnavailable, reason));
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
  scheduler_.remove(id);
  spdlog::info("stream {} closed (segment released)", id);
  streams_.erase(it);  // the Segment unlinks the /dev/shm name (file_system) and returns its budget
}

void StreamManager::on_task_done(size_t w, const wire::WorkerDone& done, Task task) {
  auto it = streams_.find(task.stream_id());
  if (it != streams_.end()) {
    Entry& entry = it->second;
    Stream& stream = *entry.stream;
    stream.add_work(w, done, static_cast<uint32_t>(task.work.indices_size()));
    if (done.has_error() && done.sample_failed() && stream.running()) {
      // One bad sample: the stream's on_error policy decides (fail, or replace it and make the chunk again).
      const uint64_t sequence = task.sequence();
      redo_or_fail(entry, sequence,
                   stream.after_bad_sample(std::move(task), done.failed_sample(), wire::from_wire(done.error())));
    } else if (done.has_error()) {
      stream.fail_at(task.sequence(), wire::from_wire(done.error()));
      deliver(entry);
    } else {
      stream.on_done(task);
      deliver(entry);
    }
  }
  scheduler_.pump();
}

void StreamManager::on_task_lost(size_t w, Task task, const TaskLoss& loss) {
  ++batches_redone_;
  auto it = streams_.find(task.stream_id());
  if (it != streams_.end() && it->second.stream->running()) {
    const uint64_t sequence = task.sequence();
    redo_or_fail(it->second, sequence, it->second.stream->after_worker_death(std::move(task), loss));
  }
  scheduler_.pump();
}

void StreamManager::redo_or_fail(Entry& entry, uint64_t sequence, Result<Task> redo) {
  if (redo.ok()) {
    scheduler_.requeue(std::move(redo).value());
    return;
  }
  entry.stream->fail_at(sequence, redo.error());
  deliver(entry);
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
  if (entry.stream->running() && entry.stream->all_delivered()) {
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

void StreamManager::fill_status(wire::StatusReply* status, const StatusView& view) const {
  for (const auto& w : scheduler_.workers().describe()) *status->add_workers() = w;
  for (const auto& [id, entry] : streams_) {
    if (view.shows(entry.stream->owner().uid)) {
      *status->add_streams() = entry.stream->info();
      *status->add_segments() = entry.stream->segment_info();
    } else {  // another user's: counted, nothing that identifies it
      status->set_streams_of_others(status->streams_of_others() + 1);
      status->set_segment_bytes_of_others(status->segment_bytes_of_others() + entry.stream->segment_info().bytes());
    }
  }
  status->set_batches_redone(batches_redone_);
  status->set_draining(draining_);
  status->set_instance_id(segments_.instance_id());
}

}  // namespace batchd::daemon
