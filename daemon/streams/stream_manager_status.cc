// What StreamManager reports (stream_manager.h): the status, a view and a page of it (status_page.h), and health.
#include "streams/stream_manager.h"

namespace batchd::daemon {

void StreamManager::fill_status(wire::StatusReply* status, const StatusView& view, const StatusPage& page) const {
  for (const auto& w : scheduler_.workers().describe()) *status->add_workers() = w;
  StatusLister list(status, page);
  for (const auto& [id, entry] : streams_) {
    if (entry.share) {
      status->set_shared_streams(status->shared_streams() + 1);
      status->set_share_subscribers(status->share_subscribers() + entry.share->subscribers());
    }
    const uint32_t uid = entry.share ? entry.share->creator_uid() : entry.stream->owner().uid;
    if (!view.shows(uid)) {  // another user's: counted, nothing that identifies it
      status->set_streams_of_others(status->streams_of_others() + 1);
      status->set_segment_bytes_of_others(status->segment_bytes_of_others() + entry.stream->segment_info().bytes());
      continue;
    }
    if (!list.wants(id)) continue;  // on an earlier page
    if (list.full()) {
      list.omit(entry.stream->segment_info().bytes());
      continue;
    }
    wire::SegmentInfo segment = entry.stream->segment_info();
    if (entry.share) {
      segment.set_share(entry.share->name());
      segment.set_subscribers(static_cast<uint32_t>(entry.share->subscribers()));
    }
    wire::StreamInfo info = entry.share ? entry.share->info() : entry.stream->info();
    if (entry.attached) {
      info.set_external(entry.stream->attach().dataset());
      for (const auto& w : entry.attached->describe()) *info.add_attached_workers() = w;
      info.set_workers_detached(entry.attached->detached());
    }
    list.add(std::move(info), std::move(segment));
  }
  cache_.fill(status->mutable_cache(), view.all && view.cache_groups, [this](const std::string& name) { return datasets_.key(name); });
  status->set_batches_redone(batches_redone_);
  status->set_draining(draining_);
  status->set_instance_id(segments_.instance_id());
}

void StreamManager::fill_health(wire::HealthReply* health) const {
  for (const auto& w : scheduler_.workers().describe()) {
    health->set_workers(health->workers() + 1);
    if (w.state() == "down") health->set_workers_down(health->workers_down() + 1);
  }
  health->set_draining(draining_);
  health->set_instance_id(segments_.instance_id());
}

}  // namespace batchd::daemon
