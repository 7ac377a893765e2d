#include "streams/remote_reads.h"

#include <algorithm>
#include <set>

namespace batchd::daemon {

RemoteReads::RemoteReads(std::shared_ptr<const WebDatasetDataset> dataset, uint64_t stream_id,
                         uint32_t prefetch_shards)
    : dataset_(std::move(dataset)), store_(*dataset_->shard_store()), stream_id_(stream_id),
      prefetch_shards_(prefetch_shards) {}

RemoteReads::~RemoteReads() {
  if (!waiting_ids_.empty()) store_.unhold(waiting_ids_);
  for (const auto& [key, ids] : pinned_) store_.release(ids);
  store_.drop_demand(stream_id_);
}

std::vector<uint32_t> RemoteReads::shards_of(std::span<const int64_t> indices) const {
  std::vector<uint32_t> ids;
  for (int64_t i : indices) {
    if (i < 0) continue;
    const uint32_t id = dataset_->shard_id(dataset_->shard_of(static_cast<uint64_t>(i)));
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

Result<bool> RemoteReads::admit(const Task& task) {
  const auto key = std::make_pair(task.sequence(), task.begin());
  if (pinned_.count(key)) return true;
  const auto& indices = task.work.indices();
  // Positions made already (a redo after a bad sample resumes at `made`) need no shard.
  std::vector<int64_t> wanted(indices.begin() + std::min<int>(static_cast<int>(task.work.made()), indices.size()),
                              indices.end());
  std::vector<uint32_t> ids = shards_of(wanted);
  if (!waiting_ids_.empty() && waiting_key_ != key) store_.unhold(waiting_ids_);  // that task was dropped
  waiting_ids_.clear();
  auto ready = store_.acquire(ids);
  if (!ready.ok()) return ready.error();
  if (*ready != remote::ShardStore::Readiness::kReady) {
    waiting_key_ = key;
    waiting_ids_ = std::move(ids);
    return false;
  }
  pinned_[key] = std::move(ids);
  return true;
}

void RemoteReads::finished(const Task& task) {
  auto it = pinned_.find(std::make_pair(task.sequence(), task.begin()));
  if (it == pinned_.end()) return;
  store_.release(it->second);
  pinned_.erase(it);
}

void RemoteReads::look_ahead(const std::vector<std::tuple<uint64_t, uint64_t, uint64_t>>& upcoming,
                             const BatchIndices& batch, const EpochIndices& epoch) {
  if (upcoming.empty() || prefetch_shards_ == 0) {  // nothing ahead, or prefetch off (remote.prefetch_shards = 0)
    store_.set_demand(stream_id_, {}, UINT64_MAX, nullptr);
    return;
  }
  std::vector<uint32_t> ahead;
  std::set<uint32_t> seen;
  for (size_t b = 0; b < upcoming.size(); ++b) {
    if (b >= 2 && ahead.size() >= prefetch_shards_) break;
    const auto [e, batch_index, first] = upcoming[b];
    for (uint32_t id : shards_of(batch(e, batch_index))) {
      if (seen.insert(id).second) ahead.push_back(id);
    }
  }
  const auto [e0, b0, position] = upcoming.front();
  if (e0 == planned_epoch_) {
    store_.set_demand(stream_id_, std::move(ahead), position, nullptr);
    return;
  }
  // A new epoch: where it reads each shard for the last time.
  planned_epoch_ = e0;
  std::unordered_map<uint32_t, uint64_t> last_use;
  const std::vector<int64_t> order = epoch(e0);
  for (uint64_t p = 0; p < order.size(); ++p) {
    if (order[p] < 0) continue;
    last_use[dataset_->shard_id(dataset_->shard_of(static_cast<uint64_t>(order[p])))] = p;
  }
  store_.set_demand(stream_id_, std::move(ahead), position, &last_use);
}

}  // namespace batchd::daemon
