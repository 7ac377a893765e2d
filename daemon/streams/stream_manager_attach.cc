// External streams' attached workers (stream_manager.h): attaching a trainer's worker process to its own stream,
// and its answers. Their connection closing is close_all_of's (stream_manager.cc).
#include <fcntl.h>

#include <cerrno>

#include "streams/stream_manager.h"

namespace batchd::daemon {

Result<StreamManager::WorkerAttachment> StreamManager::attach_worker(uint64_t stream_id, const Peer& peer,
                                                                     WorkerLink* link, uint32_t worker) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || it->second.stream->owner().uid != peer.uid) {
    // Another uid's stream gets the answer a missing one gets: nobody learns of another user's streams.
    return Error(ErrorCode::kNotFound, "no stream " + std::to_string(stream_id) + " of uid " +
                                           std::to_string(peer.uid) + " to attach a worker to (a worker attaches to "
                                           "a stream its own user opened, while it is open)");
  }
  Entry& entry = it->second;
  if (!entry.attached) {
    return Error(ErrorCode::kInvalidArgument,
                 "stream " + std::to_string(stream_id) + " reads dataset '" + entry.stream->attach().dataset() +
                     "', which the daemon's own workers make; only a stream of your own Dataset (OpenStream.external) "
                     "takes attached workers");
  }
  if (!entry.stream->running()) {
    return Error(ErrorCode::kInvalidArgument, "stream " + std::to_string(stream_id) + " has ended or failed");
  }
  auto fd = entry.stream->client_fd(/*writable=*/true);  // the worker writes its rows of the slots
  if (!fd.ok()) return fd.error();
  auto attached = entry.attached->attach(link, peer.connection_id, peer.pid, worker);
  if (!attached.ok()) return attached.error();
  WorkerAttachment out;
  *out.reply.mutable_attach() = entry.stream->attach();
  out.reply.mutable_attach()->set_stream_id(stream_id);
  out.reply.set_worker(attached->worker);
  out.segment_fd = std::move(fd).value();
  out.progress_fd = wire::UniqueFd(::fcntl(attached->progress_fd, F_DUPFD_CLOEXEC, 0));
  if (!out.progress_fd.valid()) {
    entry.attached->gone(peer.connection_id);
    return posix_error("dup of a progress page", errno);
  }
  return out;
}

void StreamManager::worker_done(uint64_t connection_id, uint64_t stream_id, const wire::WorkerDone& done) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end() || !it->second.attached) return;  // the stream was closed meanwhile
  (void)it->second.attached->done(connection_id, done);    // a mismatch ended the worker (logged there)
}

}  // namespace batchd::daemon
