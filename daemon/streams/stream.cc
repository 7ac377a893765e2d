#include "streams/stream.h"

namespace batchd::daemon {

Stream::Stream(uint64_t id, Peer owner, const wire::OpenStream& request, Sampler sampler, wire::SharedMemory memory,
               wire::WorkerAttach attach, wire::StreamOpened opened)
    : id_(id),
      owner_(owner),
      request_(request),
      sampler_(std::move(sampler)),
      memory_(std::move(memory)),
      attach_(std::move(attach)),
      opened_(std::move(opened)),
      slots_(opened_.slot_count()) {
  total_batches_ = sampler_.batches_per_epoch() * opened_.num_epochs() - opened_.start_batch();
  for (const auto& t : opened_.tensors()) bytes_per_sample_ += t.sample_bytes();
}

void Stream::account() {
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - last_change_).count();
  last_change_ = now;
  if (state_ != State::kRunning) return;
  uint32_t counts[4] = {0, 0, 0, 0};
  for (const auto& s : slots_) ++counts[static_cast<int>(s.state)];
  const bool work_left = next_dispatch_ < total_batches_;
  if (counts[0] == 0 && counts[1] == 0 && work_left) ahead_seconds_ += dt;        // all ready or leased
  if (counts[2] == 0 && counts[3] == 0 && next_deliver_ < total_batches_) stall_seconds_ += dt;  // nothing to read
}

void Stream::fail_at(uint64_t sequence, Error error) {
  if (!failure_ || sequence < failure_->first) failure_.emplace(sequence, std::move(error));
}

std::optional<Error> Stream::due_failure() const {
  if (failure_ && next_deliver_ == failure_->first) return failure_->second;
  return std::nullopt;
}

std::optional<wire::WorkerTask> Stream::next_task() {
  account();
  if (state_ != State::kRunning || next_dispatch_ >= total_batches_) return std::nullopt;
  if (failure_ && next_dispatch_ >= failure_->first) return std::nullopt;
  uint32_t slot = 0;
  while (slot < slots_.size() && slots_[slot].state != SlotState::kFree) ++slot;
  if (slot == slots_.size()) return std::nullopt;

  const uint64_t sequence = next_dispatch_++;
  const uint64_t global = sequence + opened_.start_batch();
  const uint64_t epoch = opened_.first_epoch() + global / sampler_.batches_per_epoch();
  const uint64_t batch = global % sampler_.batches_per_epoch();
  if (epoch != indices_epoch_) {
    indices_ = sampler_.epoch_indices(epoch);
    indices_epoch_ = epoch;
  }
  const auto [begin, end] = sampler_.batch_range(batch);
  wire::WorkerTask task;
  task.set_stream_id(id_);
  task.set_sequence(sequence);
  task.set_epoch(epoch);
  task.set_batch(batch);
  task.set_slot(slot);
  task.mutable_indices()->Add(indices_.begin() + static_cast<ptrdiff_t>(begin),
                              indices_.begin() + static_cast<ptrdiff_t>(end));
  if (!poisoned_.empty()) substitute(&task);
  slots_[slot] = {SlotState::kWorking, sequence, task.skipped()};
  return task;
}

void Stream::substitute(wire::WorkerTask* task) {
  // Start again from the sampler's indices of this batch, so a position is counted once however many bad
  // samples its replacement had to step over.
  if (task->epoch() != indices_epoch_) {
    indices_ = sampler_.epoch_indices(task->epoch());
    indices_epoch_ = task->epoch();
  }
  const auto [begin, end] = sampler_.batch_range(task->batch());
  const auto n = static_cast<int64_t>(opened_.dataset_size());
  uint32_t skipped = 0;
  for (uint64_t p = begin; p < end; ++p) {
    int64_t idx = indices_[p];
    if (poisoned_.count(idx)) {
      do idx = (idx + 1) % n;
      while (poisoned_.count(idx));
      ++skipped;
    }
    task->set_indices(static_cast<int>(p - begin), idx);
  }
  task->set_skipped(skipped);
}

Result<wire::WorkerTask> Stream::after_bad_sample(wire::WorkerTask task, int64_t sample, const Error& error) {
  if (request_.on_error() == wire::ON_ERROR_FAIL) {
    return Error(error.code(), "sample " + std::to_string(sample) + " of dataset '" + request_.dataset() + "': " +
                                   error.message() + " (open the stream with on_error=skip to skip bad samples)");
  }
  poisoned_.insert(sample);
  substitute(&task);
  if (task.slot() < slots_.size()) slots_[task.slot()].skipped = task.skipped();
  return task;
}

void Stream::add_stage_times(const wire::StageNanos& s) {
  stages_.set_read(stages_.read() + s.read());
  stages_.set_decode(stages_.decode() + s.decode());
  stages_.set_resize(stages_.resize() + s.resize());
  stages_.set_normalize(stages_.normalize() + s.normalize());
  stages_.set_samples(stages_.samples() + s.samples());
}

Result<wire::WorkerTask> Stream::after_worker_death(wire::WorkerTask task, int64_t culprit,
                                                    const std::string& cause) {
  ++deaths_;
  const std::string where = "batch " + std::to_string(task.batch()) + " of epoch " + std::to_string(task.epoch());
  if (culprit >= 0 && ++crash_deaths_ > kMaxDeaths) {
    return Error(ErrorCode::kDataError, std::to_string(crash_deaths_) + " workers crashed making this stream's "
                                            "batches (last: " + cause + ", " + where + "); giving up on the stream");
  }
  if (culprit >= 0) {
    if (++crashes_[culprit] >= kCrashesToPoison) {
      if (request_.on_error() == wire::ON_ERROR_FAIL) {
        return Error(ErrorCode::kDataError,
                     "sample " + std::to_string(culprit) + " of dataset '" + request_.dataset() + "' crashed " +
                         std::to_string(crashes_[culprit]) + " workers (" + cause + ", " + where +
                         "): bad input, or its memory was changed under the worker; open the stream with "
                         "on_error=skip to skip such samples");
      }
      poisoned_.insert(culprit);
      substitute(&task);
    }
  } else if (task.attempt() + 1 >= kMaxAttempts) {
    return Error(ErrorCode::kDataError, where + " killed " + std::to_string(kMaxAttempts) + " workers in a row (" +
                                            cause + ") before they reached a sample; the daemon log has details");
  } else {
    task.set_attempt(task.attempt() + 1);
  }
  if (task.slot() < slots_.size()) slots_[task.slot()].skipped = task.skipped();
  return task;
}

void Stream::on_done(uint64_t sequence, uint32_t slot) {
  account();
  if (slot < slots_.size() && slots_[slot].state == SlotState::kWorking && slots_[slot].sequence == sequence) {
    slots_[slot].state = SlotState::kReady;
  }
}

std::vector<wire::BatchReady> Stream::take_deliverable() {
  account();
  std::vector<wire::BatchReady> out;
  if (state_ == State::kFailed) return out;
  for (bool progress = true; progress;) {
    progress = false;
    for (uint32_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].state != SlotState::kReady || slots_[s].sequence != next_deliver_) continue;
      if (failure_ && next_deliver_ >= failure_->first) break;
      const uint64_t global = next_deliver_ + opened_.start_batch();
      const uint64_t batch = global % sampler_.batches_per_epoch();
      const auto [begin, end] = sampler_.batch_range(batch);
      wire::BatchReady ready;
      ready.set_stream_id(id_);
      ready.set_sequence(next_deliver_);
      ready.set_epoch(opened_.first_epoch() + global / sampler_.batches_per_epoch());
      ready.set_batch(batch);
      ready.set_slot(s);
      ready.set_num_samples(static_cast<uint32_t>(end - begin));
      ready.set_skipped(slots_[s].skipped);
      skipped_total_ += slots_[s].skipped;
      samples_delivered_ += end - begin;
      bytes_delivered_ += (end - begin) * bytes_per_sample_;
      out.push_back(ready);
      slots_[s].state = SlotState::kLeased;
      ++next_deliver_;
      progress = true;
    }
  }
  return out;
}

Status Stream::release(uint64_t sequence) {
  account();
  for (auto& slot : slots_) {
    if (slot.state == SlotState::kLeased && slot.sequence == sequence) {
      slot.state = SlotState::kFree;
      return ok_status();
    }
  }
  return Error(ErrorCode::kInvalidArgument, "stream " + std::to_string(id_) + " has no leased batch " +
                                                std::to_string(sequence) + " (released twice?)");
}

wire::StreamInfo Stream::info() const {
  wire::StreamInfo info;
  info.set_stream_id(id_);
  info.set_dataset(request_.dataset());
  info.set_pipeline(request_.pipeline());
  info.set_batch_size(request_.batch_size());
  info.set_client_pid(owner_.pid);
  info.set_batches_delivered(next_deliver_);
  info.set_batches_total(total_batches_);
  info.set_state(state_ == State::kRunning ? "running" : state_ == State::kEnded ? "ended" : "failed");
  info.set_samples_skipped(skipped_total_);
  info.set_worker_deaths(deaths_);
  info.set_on_error(request_.on_error() == wire::ON_ERROR_SKIP ? "skip" : "fail");
  *info.mutable_stages() = stages_;
  info.set_open_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count());
  info.set_samples_delivered(samples_delivered_);
  info.set_bytes_delivered(bytes_delivered_);
  info.set_ahead_seconds(ahead_seconds_);
  info.set_stall_seconds(stall_seconds_);
  return info;
}

wire::SegmentInfo Stream::segment_info() const {
  wire::SegmentInfo info;
  info.set_stream_id(id_);
  info.set_name(memory_.name().empty() ? "memfd:batchd." + std::to_string(::getpid()) + "." + std::to_string(id_)
                                       : "/dev/shm/" + memory_.name());
  info.set_strategy(opened_.strategy());
  info.set_bytes(opened_.segment_bytes());
  info.set_slots(opened_.slot_count());
  uint32_t counts[4] = {0, 0, 0, 0};
  for (const auto& s : slots_) ++counts[static_cast<int>(s.state)];
  info.set_slots_free(counts[0]);
  info.set_slots_working(counts[1]);
  info.set_slots_ready(counts[2]);
  info.set_slots_leased(counts[3]);
  info.set_owner_pid(owner_.pid);
  info.set_owner_uid(owner_.uid);
  info.set_age_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count());
  return info;
}

}  // namespace batchd::daemon
