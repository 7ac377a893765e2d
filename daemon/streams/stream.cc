#include "streams/stream.h"

#include <algorithm>

#include "batchd/wire/convert.h"

namespace batchd::daemon {

namespace {

uint64_t bytes_per_sample(const wire::StreamOpened& opened) {
  uint64_t n = 0;
  for (const auto& t : opened.tensors()) n += t.sample_bytes();
  return n;
}

}  // namespace

Stream::Stream(Peer owner, StreamPlan plan, Segment segment, ChunkPolicy chunk_policy)
    : owner_(owner),
      plan_(std::move(plan)),
      segment_(std::move(segment)),
      ring_(plan_.opened.slot_count(), wire::total_batches(plan_.opened)),
      policy_(plan_.on_error, plan_.dataset(), plan_.opened.dataset_size()),
      stats_(bytes_per_sample(plan_.opened), chunk_policy.workers),
      chunk_policy_(chunk_policy),
      order_(plan_.opened.first_epoch(), plan_.opened.start_batch(), plan_.sampler.batches_per_epoch(),
             wire::total_batches(plan_.opened)) {}

void Stream::observe() {
  stats_.observe(ring_.counts(), ring_.next_claim() < ring_.total(), ring_.next_deliver() < ring_.total(),
                 running());
}

std::span<const int64_t> Stream::sampler_indices(uint64_t epoch, uint64_t batch, uint32_t begin, uint32_t end) {
  if (plan_.sampler.random_windows()) {  // drawn per batch from its step: no epoch's worth to keep
    draws_.resize(plan_.sampler.batch_size());
    plan_.sampler.batch_draws(epoch, batch, draws_);
    return std::span<const int64_t>(draws_).subspan(begin, end - begin);
  }
  const uint64_t first = plan_.sampler.batch_range(batch).first;
  draws_.resize(end - begin);
  plan_.sampler.indices(epoch, first + begin, draws_);  // O(batch): the epoch's order is never built
  return draws_;
}

std::optional<Task> Stream::next_task() {
  observe();
  if (!running()) return std::nullopt;
  // Redone chunks, then chunks of a batch already claimed (none at or after a failing batch), then a new batch.
  const uint64_t failing = policy_.failing_sequence();
  if (parked_ && parked_->sequence() >= failing) parked_.reset();
  if (parked_) {  // a task waiting for its remote shards goes first (its indices were taken)
    Task task = std::move(*parked_);
    parked_.reset();
    return admitted(std::move(task));
  }
  if (failing != UINT64_MAX) std::erase_if(redo_, [failing](const Task& t) { return t.sequence() >= failing; });
  if (!redo_.empty()) {
    Task task = std::move(redo_.front());
    redo_.pop_front();
    fill_indices(&task, task.end());  // a sample found bad since it was requeued never reaches a worker
    return admitted(std::move(task));
  }
  while (!chunks_.empty() && chunks_.front().task.sequence() >= failing) chunks_.pop_front();
  if (chunks_.empty()) claim_next_batch();
  if (chunks_.empty()) return std::nullopt;
  Chunk chunk = std::move(chunks_.front());
  chunks_.pop_front();
  // Indices are taken at dispatch, so a sample found bad since the batch was claimed never reaches a worker.
  fill_indices(&chunk.task, chunk.end);
  return admitted(std::move(chunk.task));
}

std::optional<Task> Stream::admitted(Task task) {
  if (remote_ == nullptr) return task;
  auto ready = remote_->admit(task);
  if (!ready.ok()) {
    policy_.fail_at(task.sequence(), ready.error());
    admission_failed_ = true;
    return std::nullopt;
  }
  if (*ready) return task;
  parked_ = std::move(task);  // asked again at the next pump (a fetch completing pumps)
  return std::nullopt;
}

void Stream::look_ahead() {
  if (remote_ == nullptr) return;
  std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> upcoming;
  // From the batch just claimed (its chunks wait for workers: its shards must stay), then the ones after it.
  const uint64_t claimed = ring_.next_claim() > 0 ? ring_.next_claim() - 1 : 0;
  for (uint64_t seq = claimed; seq < ring_.total() && upcoming.size() < 256; ++seq) {
    const BatchOrder::Item item = order_.at(seq);
    upcoming.emplace_back(item.epoch, item.batch, plan_.sampler.batch_range(item.batch).first);
  }
  remote_->look_ahead(
      upcoming,
      [this](uint64_t epoch, uint64_t batch) {
        const auto [first, last] = plan_.sampler.batch_range(batch);
        auto span = sampler_indices(epoch, batch, 0, static_cast<uint32_t>(last - first));
        return std::vector<int64_t>(span.begin(), span.end());
      },
      [this](uint64_t epoch) { return plan_.sampler.epoch_indices(epoch); });  // once per epoch (remote_reads.h)
}

void Stream::claim_next_batch() {
  if (!ring_.can_claim(policy_.failing_sequence())) return;
  const BatchOrder::Item item = order_.at(ring_.next_claim());
  const uint64_t batch = item.batch;
  const auto [first, last] = plan_.sampler.batch_range(batch);
  const auto samples = static_cast<uint32_t>(last - first);
  const std::vector<uint32_t> begins =
      plan_.whole_batches() ? std::vector<uint32_t>{0}
                            : chunk_begins(samples, plan_.opened.slot_count(), chunk_policy_, stats_.per_sample_ns());
  auto claim = ring_.claim(policy_.failing_sequence(), begins);
  if (!claim) return;
  ++batches_made_;
  batches_remade_ += item.remade;
  for (size_t c = 0; c < begins.size(); ++c) {
    const uint32_t begin = begins[c], end = c + 1 < begins.size() ? begins[c + 1] : samples;
    Task task;
    task.work.set_stream_id(id());
    task.work.set_sequence(claim->sequence);
    task.work.set_epoch(item.epoch);
    task.work.set_batch(batch);
    task.work.set_slot(claim->slot);
    task.work.set_begin(begin);
    task.work.set_batch_samples(samples);
    chunks_.push_back({std::move(task), end});
  }
  look_ahead();
}

void Stream::fill_indices(Task* task, uint32_t end) {
  policy_.substitute(sampler_indices(task->work.epoch(), task->work.batch(), task->begin(), end), &task->work);
  if (plan_.sampler.repeated_aug() > 1) {  // each copy of a repeated index draws its own augmentation
    const uint64_t first = plan_.sampler.batch_range(task->work.batch()).first + task->begin();
    task->work.clear_copies();
    for (int i = 0; i < task->work.indices_size(); ++i) task->work.add_copies(plan_.sampler.copy_at(first + i));
  }
  ring_.set_skipped(task->work.slot(), task->begin(), task->work.skipped());
}

Result<Task> Stream::redo(Task task, Status decision) {
  if (!decision.ok()) return decision.error();
  fill_indices(&task, task.end());
  task.deadline = Task::Clock::time_point::max();
  return task;
}

Result<Task> Stream::after_worker_death(Task task, const TaskLoss& loss) {
  if (remote_ != nullptr) remote_->finished(task);  // admitted again when redone
  const Status decision = policy_.after_worker_death(&task.work, loss);
  return redo(std::move(task), decision);
}

Result<Task> Stream::after_bad_sample(Task task, int64_t sample, const Error& error) {
  if (remote_ != nullptr) remote_->finished(task);  // admitted again when redone
  // The worker made every position before the first (from where it started) that holds `sample`: resume there.
  for (int p = static_cast<int>(task.work.made()); p < task.work.indices_size(); ++p) {
    if (task.work.indices(p) == sample) {
      task.work.set_made(static_cast<uint32_t>(p));
      break;
    }
  }
  const Status decision = policy_.after_bad_sample(sample, error);
  return redo(std::move(task), decision);
}

void Stream::on_done(const Task& task) {
  observe();
  if (remote_ != nullptr) remote_->finished(task);
  ring_.finish(task.sequence(), task.work.slot(), task.begin());
}

std::vector<wire::BatchReady> Stream::take_deliverable() {
  observe();
  std::vector<wire::BatchReady> out;
  if (state_ == State::kFailed) return out;
  const uint64_t limit = policy_.failing_sequence();
  for (const auto& r : plan_.completion_order ? ring_.take_completed(limit) : ring_.take_in_order(limit)) {
    const BatchOrder::Item item = order_.at(r.sequence);
    const auto [begin, end] = plan_.sampler.batch_range(item.batch);
    wire::BatchReady ready;
    ready.set_stream_id(id());
    ready.set_sequence(r.sequence);
    ready.set_epoch(item.epoch);
    ready.set_batch(item.batch);
    ready.set_slot(r.slot);
    ready.set_num_samples(static_cast<uint32_t>(end - begin));
    ready.set_skipped(r.skipped);
    stats_.delivered(end - begin, r.skipped);
    out.push_back(ready);
  }
  return out;
}

Status Stream::release(uint64_t sequence) {
  observe();
  auto st = ring_.release(sequence);
  if (!st.ok()) return st.error().with_context("stream " + std::to_string(id()));
  return ok_status();
}

void Stream::set_plain_total(uint64_t plain_total) {
  order_.set_plain_total(std::max(plain_total, order_.plain_before(ring_.next_claim())));
  ring_.set_total(order_.total());
}

void Stream::insert_remakes(uint64_t epoch, uint64_t count, uint64_t owner) {
  order_.insert_remakes(epoch, count, owner);
  ring_.set_total(order_.total());
}

void Stream::drop_remakes(uint64_t owner) {
  order_.drop_remakes(owner, ring_.next_claim());
  ring_.set_total(order_.total());
}

wire::StreamInfo Stream::info() const {
  wire::StreamInfo info;
  info.set_stream_id(id());
  info.set_dataset(plan_.dataset());
  info.set_pipeline(plan_.attach.pipeline());
  info.set_batch_size(plan_.opened.batch_size());
  info.set_client_pid(owner_.pid);
  info.set_batches_delivered(ring_.delivered());
  info.set_batches_total(ring_.total());
  info.set_state(state_ == State::kRunning ? "running" : state_ == State::kEnded ? "ended" : "failed");
  info.set_worker_deaths(policy_.worker_deaths());
  info.set_on_error(policy_.on_error() == wire::ON_ERROR_SKIP ? "skip" : "fail");
  info.set_batches_made(batches_made_);
  info.set_batches_remade(batches_remade_);
  stats_.fill(&info);
  return info;
}

wire::SegmentInfo Stream::segment_info() const {
  wire::SegmentInfo info;
  info.set_stream_id(id());
  info.set_name(segment_.display_name());
  info.set_strategy(plan_.opened.strategy());
  info.set_bytes(plan_.opened.segment_bytes());
  info.set_slots(plan_.opened.slot_count());
  const auto counts = ring_.counts();
  info.set_slots_free(counts[0]);
  info.set_slots_working(counts[1]);
  info.set_slots_ready(counts[2]);
  info.set_slots_leased(counts[3]);
  info.set_owner_pid(owner_.pid);
  info.set_owner_uid(owner_.uid);
  info.set_age_seconds(stats_.open_seconds());
  return info;
}

}  // namespace batchd::daemon
