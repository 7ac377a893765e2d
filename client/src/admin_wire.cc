#include "admin_wire.h"

#include "wire_mapping.h"

namespace batchd::detail {

namespace {

template <typename Out, typename In>
std::vector<Out> all_from_wire(const google::protobuf::RepeatedPtrField<In>& in) {
  std::vector<Out> out;
  out.reserve(in.size());
  for (const auto& x : in) out.push_back(from_wire(x));
  return out;
}

void fill_wire(const WorkerStatus& s, wire::WorkerInfo* w);  // below: an attached worker is listed in its stream

StageTimes stages_from_wire(const wire::StageNanos& s) {
  return {.read_nanos = s.read(),
          .decode_nanos = s.decode(),
          .resize_nanos = s.resize(),
          .normalize_nanos = s.normalize(),
          .samples = s.samples(),
          .cache_hits = s.cache_hits(),
          .cache_fills = s.cache_fills(),
          .cache_uncached = s.cache_uncached()};
}

void fill_wire(const StageTimes& s, wire::StageNanos* w) {
  w->set_read(s.read_nanos);
  w->set_decode(s.decode_nanos);
  w->set_resize(s.resize_nanos);
  w->set_normalize(s.normalize_nanos);
  w->set_samples(s.samples);
  w->set_cache_hits(s.cache_hits);
  w->set_cache_fills(s.cache_fills);
  w->set_cache_uncached(s.cache_uncached);
}

void fill_wire(const StreamStatus& s, wire::StreamInfo* w) {
  w->set_stream_id(s.stream_id);
  w->set_dataset(s.dataset);
  w->set_pipeline(s.pipeline);
  w->set_batch_size(s.batch_size);
  w->set_client_pid(s.client_pid);
  w->set_batches_delivered(s.batches_delivered);
  w->set_batches_total(s.batches_total);
  w->set_state(s.state);
  w->set_samples_skipped(s.samples_skipped);
  w->set_worker_deaths(s.worker_deaths);
  w->set_on_error(s.on_error);
  fill_wire(s.stages, w->mutable_stages());
  w->set_open_seconds(s.open_seconds);
  w->set_samples_delivered(s.samples_delivered);
  w->set_bytes_delivered(s.bytes_delivered);
  w->set_ahead_seconds(s.ahead_seconds);
  w->set_stall_seconds(s.stall_seconds);
  for (uint64_t n : s.chunks_by_worker) w->add_chunks_by_worker(n);
  w->set_share(s.share);
  w->set_batches_made(s.batches_made);
  w->set_batches_remade(s.batches_remade);
  w->set_max_lag(s.max_lag);
  w->set_external(s.external);
  for (const auto& x : s.attached_workers) fill_wire(x, w->add_attached_workers());
  w->set_workers_detached(s.workers_detached);
  for (const auto& x : s.subscribers) {
    auto* sub = w->add_subscribers();
    sub->set_client_pid(x.client_pid);
    sub->set_uid(x.uid);
    sub->set_batches_delivered(x.batches_delivered);
    sub->set_batches_total(x.batches_total);
    sub->set_held(x.held);
    sub->set_lag(x.lag);
    sub->set_state(x.state);
    sub->set_joined_epoch(x.joined_epoch);
    sub->set_joined_at_batch(x.joined_at_batch);
  }
}

void fill_wire(const WorkerStatus& s, wire::WorkerInfo* w) {
  w->set_pid(s.pid);
  w->set_state(s.state);
  w->set_batches_done(s.batches_done);
  w->set_restarts(s.restarts);
  w->set_busy_seconds(s.busy_seconds);
  w->set_alive_seconds(s.alive_seconds);
}

void fill_wire(const DatasetStatus& s, wire::DatasetInfo* w) {
  w->set_name(s.name);
  w->set_format(s.format);
  w->set_state(s.state);
  w->set_detail(s.detail);
  w->set_samples(s.samples);
  w->set_fingerprint(s.fingerprint);
  w->set_fingerprint_covers(s.fingerprint_covers);
  w->set_fingerprint_status(s.fingerprint_status);
  if (s.remote.shards > 0) *w->mutable_remote() = to_wire(s.remote);
}

}  // namespace

SubscriberStatus from_wire(const wire::SubscriberInfo& w) {
  return {.client_pid = w.client_pid(),
          .uid = w.uid(),
          .batches_delivered = w.batches_delivered(),
          .batches_total = w.batches_total(),
          .held = w.held(),
          .lag = w.lag(),
          .state = w.state(),
          .joined_epoch = w.joined_epoch(),
          .joined_at_batch = w.joined_at_batch()};
}

DatasetStatus from_wire(const wire::DatasetInfo& w) {
  return {.name = w.name(),
          .format = w.format(),
          .state = w.state(),
          .detail = w.detail(),
          .samples = w.samples(),
          .fingerprint = w.fingerprint(),
          .fingerprint_covers = w.fingerprint_covers(),
          .fingerprint_status = w.fingerprint_status(),
          .remote = from_wire(w.remote())};
}

StreamStatus from_wire(const wire::StreamInfo& w) {
  return {.stream_id = w.stream_id(),
          .dataset = w.dataset(),
          .pipeline = w.pipeline(),
          .batch_size = w.batch_size(),
          .client_pid = w.client_pid(),
          .batches_delivered = w.batches_delivered(),
          .batches_total = w.batches_total(),
          .state = w.state(),
          .samples_skipped = w.samples_skipped(),
          .worker_deaths = w.worker_deaths(),
          .on_error = w.on_error(),
          .stages = stages_from_wire(w.stages()),
          .open_seconds = w.open_seconds(),
          .samples_delivered = w.samples_delivered(),
          .bytes_delivered = w.bytes_delivered(),
          .ahead_seconds = w.ahead_seconds(),
          .stall_seconds = w.stall_seconds(),
          .chunks_by_worker = {w.chunks_by_worker().begin(), w.chunks_by_worker().end()},
          .share = w.share(),
          .subscribers = all_from_wire<SubscriberStatus>(w.subscribers()),
          .batches_made = w.batches_made(),
          .batches_remade = w.batches_remade(),
          .max_lag = w.max_lag(),
          .external = w.external(),
          .attached_workers = all_from_wire<WorkerStatus>(w.attached_workers()),
          .workers_detached = w.workers_detached()};
}

WorkerStatus from_wire(const wire::WorkerInfo& w) {
  return {.pid = w.pid(),
          .state = w.state(),
          .batches_done = w.batches_done(),
          .restarts = w.restarts(),
          .busy_seconds = w.busy_seconds(),
          .alive_seconds = w.alive_seconds()};
}

SegmentStatus from_wire(const wire::SegmentInfo& w) {
  return {.stream_id = w.stream_id(),
          .name = w.name(),
          .strategy = from_wire(w.strategy()),
          .bytes = w.bytes(),
          .slots = w.slots(),
          .slots_free = w.slots_free(),
          .slots_working = w.slots_working(),
          .slots_ready = w.slots_ready(),
          .slots_leased = w.slots_leased(),
          .owner_pid = w.owner_pid(),
          .owner_uid = w.owner_uid(),
          .age_seconds = w.age_seconds(),
          .share = w.share(),
          .subscribers = w.subscribers()};
}

DaemonHealth from_wire(const wire::HealthReply& w) {
  return {.daemon_pid = w.daemon_pid(),
          .instance_id = w.instance_id(),
          .version = w.version(),
          .uptime_seconds = w.uptime_seconds(),
          .draining = w.draining(),
          .workers = w.workers(),
          .workers_down = w.workers_down()};
}

wire::SegmentInfo to_wire(const SegmentStatus& s) {
  wire::SegmentInfo w;
  w.set_stream_id(s.stream_id);
  w.set_name(s.name);
  w.set_strategy(to_wire(s.strategy));
  w.set_bytes(s.bytes);
  w.set_slots(s.slots);
  w.set_slots_free(s.slots_free);
  w.set_slots_working(s.slots_working);
  w.set_slots_ready(s.slots_ready);
  w.set_slots_leased(s.slots_leased);
  w.set_owner_pid(s.owner_pid);
  w.set_owner_uid(s.owner_uid);
  w.set_age_seconds(s.age_seconds);
  w.set_share(s.share);
  w.set_subscribers(s.subscribers);
  return w;
}

DaemonStatus from_wire(const wire::StatusReply& w) {
  DaemonStatus s;
  s.daemon_pid = w.daemon_pid();
  s.instance_id = w.instance_id();
  s.version = w.version();
  s.uptime_seconds = w.uptime_seconds();
  s.default_strategy = from_wire(w.default_strategy());
  s.connections = w.connections();
  s.datasets.assign(w.datasets().begin(), w.datasets().end());
  s.dataset_entries = all_from_wire<DatasetStatus>(w.dataset_entries());
  s.batches_redone = w.batches_redone();
  s.draining = w.draining();
  s.workers = all_from_wire<WorkerStatus>(w.workers());
  s.streams = all_from_wire<StreamStatus>(w.streams());
  s.segments = all_from_wire<SegmentStatus>(w.segments());
  s.streams_of_others = w.streams_of_others();
  s.segment_bytes_of_others = w.segment_bytes_of_others();
  s.admin = w.admin();
  s.shared_streams = w.shared_streams();
  s.share_subscribers = w.share_subscribers();
  s.shm_budget_bytes = w.shm_budget_bytes();
  s.streams_omitted = w.streams_omitted();
  s.segment_bytes_omitted = w.segment_bytes_omitted();
  s.next_after_stream_id = w.next_after_stream_id();
  s.cache = from_wire(w.cache());
  s.remote_cache = from_wire(w.remote_cache());
  return s;
}

wire::StatusReply to_wire(const DaemonStatus& s) {
  wire::StatusReply w;
  w.set_daemon_pid(s.daemon_pid);
  w.set_instance_id(s.instance_id);
  w.set_version(s.version);
  w.set_uptime_seconds(s.uptime_seconds);
  w.set_default_strategy(to_wire(s.default_strategy));
  for (const auto& x : s.workers) fill_wire(x, w.add_workers());
  for (const auto& x : s.streams) fill_wire(x, w.add_streams());
  for (const auto& x : s.segments) *w.add_segments() = to_wire(x);
  w.set_connections(s.connections);
  for (const auto& d : s.datasets) w.add_datasets(d);
  for (const auto& d : s.dataset_entries) fill_wire(d, w.add_dataset_entries());
  w.set_batches_redone(s.batches_redone);
  w.set_draining(s.draining);
  w.set_streams_of_others(s.streams_of_others);
  w.set_segment_bytes_of_others(s.segment_bytes_of_others);
  w.set_admin(s.admin);
  w.set_shared_streams(s.shared_streams);
  w.set_share_subscribers(s.share_subscribers);
  w.set_shm_budget_bytes(s.shm_budget_bytes);
  w.set_streams_omitted(s.streams_omitted);
  w.set_segment_bytes_omitted(s.segment_bytes_omitted);
  w.set_next_after_stream_id(s.next_after_stream_id);
  *w.mutable_cache() = to_wire(s.cache);
  if (s.remote_cache.enabled) *w.mutable_remote_cache() = to_wire(s.remote_cache);
  return w;
}

}  // namespace batchd::detail
