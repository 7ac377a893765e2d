// A connection as an attached worker (connection.h): AttachWorker, and the WorkerLink it is for the stream's
// pool of attached workers (workers/attached_workers.h).
#include "server/connection.h"

namespace batchd::daemon {

void Connection::dispatch_worker(const wire::Request& request) {
  const uint64_t rid = request.request_id();
  if (request.has_attach_worker() && attached_stream_ == 0) return attach_worker(rid, request.attach_worker());
  if (attached_stream_ == 0) {
    return protocol_error(rid, Error(ErrorCode::kProtocol, "worker_done from a connection that is not an attached "
                                                           "worker (send attach_worker first)"));
  }
  if (!request.has_worker_done()) {
    return protocol_error(rid, Error(ErrorCode::kProtocol, "this connection is an attached worker of stream " +
                                                               std::to_string(attached_stream_) +
                                                               ": it may send only worker_done"));
  }
  streams_.worker_done(peer_.connection_id, attached_stream_, request.worker_done());
}

void Connection::attach_worker(uint64_t rid, const wire::AttachWorker& attach) {
  if (streams_.streams_of(peer_.connection_id) > 0) {
    return reply_error(rid, Error(ErrorCode::kInvalidArgument, "a connection with open streams cannot attach as a "
                                                               "worker: attach from a connection of its own"));
  }
  auto attached = streams_.attach_worker(attach.stream_id(), peer_, this, attach.worker());
  if (!attached.ok()) return reply_error(rid, attached.error());
  attached_stream_ = attach.stream_id();
  wire::Reply r;
  *r.mutable_worker_attached() = std::move(attached->reply);
  reply(rid, std::move(r), std::move(attached->segment_fd));
  wire::Reply page;
  page.set_progress_page(true);
  reply(0, std::move(page), std::move(attached->progress_fd));  // an event: it follows the reply
  streams_.after_worker_attached();  // its first task, after the two frames it needs to make it
}

void Connection::send_task(const wire::WorkerTask& task) {
  wire::Reply r;
  *r.mutable_worker_task() = task;
  reply(0, std::move(r));
}

void Connection::end_attachment(const wire::WorkerDetach& detach) {
  wire::Reply r;
  *r.mutable_worker_detach() = detach;
  reply(0, std::move(r));
  close(false);
}

}  // namespace batchd::daemon
