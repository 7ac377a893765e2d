// remote_reads.h — a stream's side of remote shards (datasets whose shards are s3:// or http(s):// URLs): no task
// reaches a worker before every shard it reads is on this host's disk, and the shards of the batches to come are
// fetched ahead, in the sampler's order.
//
// admit(task) before a task is handed out: kReady pins the task's shards in the shard store (never evicted while it
// runs) until finished(task); kWaiting asks the store for them first (the stream keeps the task and asks again on
// the next pump: the store pumps the scheduler when a fetch completes). look_ahead() after each claim: the distinct
// shards of the batches after the one claimed — at least the next 2 batches' and at least remote.prefetch_shards of
// them (at most 256 batches ahead; none with prefetch_shards = 0) — in order, become the stream's ahead list (fetched in that order, never evicted
// to make room for another prefetch); and at each new epoch, the last position at which the epoch reads each shard
// (shards read for the last time this epoch are evicted first).
//
// Not thread-safe: the event loop (the store itself is thread-safe). The destructor releases every pin and the
// stream's ahead list.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "batchd/result.h"
#include "data/webdataset_dataset.h"
#include "base/task.h"

namespace batchd::daemon {

class RemoteReads final {
 public:
  RemoteReads(std::shared_ptr<const WebDatasetDataset> dataset, uint64_t stream_id, uint32_t prefetch_shards);
  ~RemoteReads();
  RemoteReads(const RemoteReads&) = delete;
  RemoteReads& operator=(const RemoteReads&) = delete;

  // true: the task may run (its shards pinned); false: not yet. kResourceExhausted: never (the store's bound).
  Result<bool> admit(const Task& task);
  // The task ended (done, failed, or lost with its worker): its pins go.
  void finished(const Task& task);

  // The sampler's indices of (epoch, batch), and that epoch's whole order (for the last-use positions).
  using BatchIndices = std::function<std::vector<int64_t>(uint64_t epoch, uint64_t batch)>;
  using EpochIndices = std::function<std::vector<int64_t>(uint64_t epoch)>;
  // `upcoming` lists (epoch, batch, first position of the batch in its epoch) of the batches after the one claimed,
  // in order (the stream's BatchOrder), at most 256.
  void look_ahead(const std::vector<std::tuple<uint64_t, uint64_t, uint64_t>>& upcoming, const BatchIndices& batch,
                  const EpochIndices& epoch);

 private:
  std::vector<uint32_t> shards_of(std::span<const int64_t> indices) const;

  std::shared_ptr<const WebDatasetDataset> dataset_;
  remote::ShardStore& store_;
  uint64_t stream_id_;
  uint32_t prefetch_shards_;
  std::map<std::pair<uint64_t, uint32_t>, std::vector<uint32_t>> pinned_;  // (sequence, begin) -> shard ids
  uint64_t planned_epoch_ = UINT64_MAX;
  // The task last told kWaiting (its shards are held by the store until it runs, or unhold()).
  bool waiting_ = false;
  std::pair<uint64_t, uint32_t> waiting_key_{UINT64_MAX, 0};
};

}  // namespace batchd::daemon
