// StreamManager's part in remote shards (stream_manager.h): a stream over remote shards gets its RemoteReads
// (streams/remote_reads.h), and a stream whose task was refused at hand-out (its shards can never fit the shard cache)
// gets its failure delivered after the pump that refused it, since no worker event will.
#include "data/webdataset_dataset.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {

void StreamManager::attach_remote_reads(Stream& stream) {
  auto found = datasets_.find_key(stream.attach().dataset_key());
  if (!found.ok()) return;
  auto web = std::dynamic_pointer_cast<const WebDatasetDataset>(*found);
  if (web == nullptr || !web->is_remote()) return;
  stream.set_remote(std::make_unique<RemoteReads>(web, stream.id(), config_.remote.prefetch_shards));
}

void StreamManager::deliver_refused() {
  std::vector<uint64_t> refused;
  for (const auto& [id, entry] : streams_) {
    if (entry.stream->take_admission_failure()) refused.push_back(id);
  }
  for (uint64_t id : refused) {
    if (auto it = streams_.find(id); it != streams_.end()) deliver(it->second);
  }
}

}  // namespace batchd::daemon
