#include "streams/stream_manager.h"

#include <spdlog/spdlog.h>

#include "batchd/wire/convert.h"
#include "transforms/spec/cache_point.h"

namespace batchd::daemon {

StreamManager::StreamManager(const StreamSettings& config, const DatasetRegistry& datasets, Workers& workers,
                             SegmentInstance instance, boost::asio::io_context* io, SampleCache* cache)
    : config_(config),
      io_(io),
      datasets_(datasets),
      cache_(cache),
      segments_(std::move(instance), config.limits.max_shm_bytes),
      scheduler_(workers) {
  scheduler_.set_after_pump([this] { deliver_refused(); });
  if (cache != nullptr) segments_.set_also_held([cache] { return cache->totals().live_bytes; });
}

PlanContext StreamManager::plan_context(const Peer& owner) const {
  return PlanContext{.limits = config_.limits,
                     .default_strategy = config_.shm_strategy,
                     .draining = draining_,
                     .connection_streams = streams_of(owner.connection_id),
                     .uid = owner.uid,
                     .uid_streams = streams_of_uid(owner.uid),
                     .share_extra_slots = config_.shares.max_lag,
                     .pipelines = &config_.pipelines};
}

Result<StreamManager::Opened> StreamManager::open(const wire::OpenStream& req, const Peer& owner,
                                                  EventSink* sink) {
  if (!req.share().empty()) return open_shared(req, owner, sink);
  auto planned = plan(req, plan_context(owner), datasets_);
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
  Entry& entry = add_stream(std::move(planned).value(), std::move(segment).value(), owner, sink);
  scheduler_.pump();
  return Opened{entry.stream->opened(), std::move(client_fd)};
}

void StreamManager::note_cache_point(uint64_t id, const wire::WorkerAttach& attach, uint64_t samples) {
  const auto& ops = attach.spec().ops();
  for (int i = 0; i < ops.size(); ++i) {
    if (ops[i].name() != "cache") continue;
    const CachePrefix prefix = cache_prefix(attach.spec(), i);
    cache_.add_stream(id, attach.dataset_key(), samples, prefix.id, prefix.text);
    return;
  }
}

StreamManager::Entry& StreamManager::add_stream(StreamPlan planned, Segment segment, const Peer& owner,
                                                EventSink* sink) {
  const bool external = planned.external;
  const uint32_t workers = external ? std::max(1u, planned.external_workers)
                                    : static_cast<uint32_t>(scheduler_.workers().size());
  const bool round_robin = planned.external_round_robin;
  const ChunkPolicy chunks{workers, config_.min_chunk_us};
  auto stream = std::make_unique<Stream>(owner, std::move(planned), std::move(segment), chunks);
  const uint64_t id = stream->id();
  const wire::StreamOpened& o = stream->opened();
  const wire::PipelineOptions& options = stream->attach().pipeline_options();
  spdlog::info("stream {} opened: dataset={} pipeline={}{}{} batch_size={} slots={} strategy={} segment={} bytes{}{}{} "
               "client pid={} uid={}",
               id, stream->attach().dataset(), stream->attach().pipeline(),
               options.has_lm() ? " seq_len=" + std::to_string(options.lm().seq_len()) : "",
               options.lm().sampling() == wire::RANDOM_WINDOWS ? " sampling=random_windows" : "", o.batch_size(),
               o.slot_count(), strategy_name(o.strategy()), o.segment_bytes(), o.share().empty() ? "" : " share=",
               o.share(), o.num_epochs() == 0 ? " endless" : "", owner.pid, owner.uid);
  std::unique_ptr<AttachedWorkers> attached;
  if (external && io_ != nullptr) {
    const TaskTimeouts timeouts{std::chrono::seconds(config_.task_timeout_min_s),
                                std::chrono::milliseconds(config_.per_sample_timeout_ms)};
    attached = std::make_unique<AttachedWorkers>(*io_, id, config_.limits.max_attached_workers, timeouts, *this,
                                                 round_robin ? workers : 0);
    attached->set_slot_layout(stream->attach());
  }
  if (!external) note_cache_point(id, stream->attach(), o.dataset_size());
  if (!external) attach_remote_reads(*stream);
  scheduler_.add(stream.get(), attached.get());
  Entry& entry = streams_[id];
  entry = Entry{std::move(stream), sink, nullptr, std::move(attached)};
  return entry;
}

Status StreamManager::close(uint64_t stream_id, uint64_t connection_id) {
  auto it = streams_.find(stream_id);
  if (it != streams_.end() && it->second.share && it->second.share->has(connection_id)) {
    leave_share(it, connection_id);
    return ok_status();
  }
  if (it == streams_.end() || it->second.share || it->second.stream->owner().connection_id != connection_id) {
    return Error(ErrorCode::kInvalidArgument, "no stream " + std::to_string(stream_id) + " is open on this connection");
  }
  erase(it);
  return ok_status();
}

Status StreamManager::release(uint64_t stream_id, uint64_t sequence, uint64_t connection_id) {
  auto it = streams_.find(stream_id);
  if (it != streams_.end() && it->second.share && it->second.share->has(connection_id)) {
    BATCHD_RETURN_IF_ERROR(it->second.share->release(connection_id, sequence));
    it->second.share->deliver();
    scheduler_.pump();
    return ok_status();
  }
  if (it == streams_.end() || it->second.share || it->second.stream->owner().connection_id != connection_id) {
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
  for (auto& [id, entry] : streams_) {
    if (entry.attached && entry.attached->has(connection_id)) entry.attached->gone(connection_id);
  }
  for (auto it = streams_.begin(); it != streams_.end();) {
    auto next = std::next(it);
    if (it->second.share) {
      if (it->second.share->has(connection_id)) leave_share(it, connection_id);
    } else if (it->second.stream->owner().connection_id == connection_id) {
      erase(it);
    }
    it = next;
  }
}

void StreamManager::shutdown(const std::string& reason) {
  for (auto& [id, entry] : streams_) {
    if (entry.share) {
      entry.share->fail_all(Error(ErrorCode::kUnavailable, reason));
    } else if (entry.stream->running()) {
      fail(entry, Error(ErrorCode::kUnavailable, reason));
    }
  }
  shares_.clear();
  while (!streams_.empty()) erase(streams_.begin());
}

std::set<std::string> StreamManager::dataset_keys_in_use() const {
  std::set<std::string> keys;
  for (const auto& [id, entry] : streams_) keys.insert(entry.stream->attach().dataset_key());
  return keys;
}

size_t StreamManager::streams_of(uint64_t connection_id) const {
  size_t n = 0;
  for (const auto& [id, entry] : streams_) {
    n += entry.share ? entry.share->has(connection_id) : entry.stream->owner().connection_id == connection_id;
  }
  return n;
}

size_t StreamManager::streams_of_uid(uint32_t uid) const {
  size_t n = 0;
  for (const auto& [id, entry] : streams_) {
    n += entry.share ? entry.share->subscribers_of(uid) : entry.stream->owner().uid == uid;
  }
  return n;
}

void StreamManager::erase(std::map<uint64_t, Entry>::iterator it) {
  const uint64_t id = it->first;
  scheduler_.remove(id);
  cache_.remove_stream(id);
  spdlog::info("stream {} closed (segment released)", id);
  streams_.erase(it);  // the Segment unlinks the /dev/shm name (file_system) and returns its budget
}

void StreamManager::on_task_done(size_t w, const wire::WorkerDone& done, Task task) {
  auto it = streams_.find(task.stream_id());
  if (it != streams_.end()) {
    Entry& entry = it->second;
    Stream& stream = *entry.stream;
    stream.add_work(w, done, task.samples() - task.work.made());  // the samples this worker made
    cache_.count(task.stream_id(), done.stages());
    if (done.has_error() && done.sample_failed() && stream.running()) {
      // One bad sample: the stream's on_error policy decides (fail, or replace it and make the chunk again).
      const uint64_t sequence = task.sequence();
      redo_or_fail(entry, sequence,
                   stream.after_bad_sample(std::move(task), done.failed_sample(), wire::from_wire(done.error())));
    } else if (done.has_error()) {
      stream.task_ended(task);
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
  } else if (it != streams_.end()) {
    it->second.stream->task_ended(task);
  }
  scheduler_.pump();
}

void StreamManager::redo_or_fail(Entry& entry, uint64_t sequence, Result<Task> redo) {
  if (redo.ok()) {
    entry.stream->requeue(std::move(redo).value());  // first within its stream, in its turn (scheduler.h)
    return;
  }
  entry.stream->fail_at(sequence, redo.error());
  deliver(entry);
}

void StreamManager::deliver(Entry& entry) {
  if (entry.share) {
    entry.share->deliver();
    return;
  }
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

}  // namespace batchd::daemon
