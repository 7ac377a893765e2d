// The request router of a client connection (connection.h): the admin check, then each request type to the
// stream manager or the server; an attached worker's requests go on to connection_worker.cc.
#include <spdlog/spdlog.h>

#include "server/authorization.h"
#include "server/connection.h"
#include "server/server.h"

namespace batchd::daemon {

void Connection::dispatch(const wire::Request& request) {
  const uint64_t rid = request.request_id();
  // The one authorization check: every admin request, whatever its type (authorization.h lists them).
  if (requires_admin(request.body_case()) && !admin_) {
    const Error refused = server_.admin_policy().refusal(request_name(request.body_case()), credentials_);
    server_.log_denied("connection " + std::to_string(peer_.connection_id) + ": refused " +
                       request_name(request.body_case()) + " from " + credentials_.describe() +
                       ": not an admin (root, the daemon's uid or daemon.admin_group)");
    return reply_error(rid, refused);
  }
  if (attached_stream_ != 0 || request.body_case() == wire::Request::kAttachWorker ||
      request.body_case() == wire::Request::kWorkerDone) {
    return dispatch_worker(request);  // connection_worker.cc
  }
  switch (request.body_case()) {
    case wire::Request::kOpenStream: {
      auto opened = streams_.open(request.open_stream(), peer_, this);
      if (!opened.ok()) return reply_error(rid, opened.error());
      wire::Reply r;
      *r.mutable_stream_opened() = opened->reply;
      const uint64_t id = opened->reply.stream_id();
      reply(rid, std::move(r), std::move(opened->client_fd));
      streams_.after_opened(id);  // a shared stream's first batches may be ready already: after the reply
      return;
    }
    case wire::Request::kCloseStream: {
      const uint64_t id = request.close_stream().stream_id();
      if (auto st = streams_.close(id, peer_.connection_id); !st.ok()) return reply_error(rid, st.error());
      wire::Reply r;
      r.set_stream_closed(id);
      return reply(rid, std::move(r));
    }
    case wire::Request::kRelease: {
      const auto& rel = request.release();
      if (auto st = streams_.release(rel.stream_id(), rel.sequence(), peer_.connection_id); !st.ok()) {
        return protocol_error(rid, st.error());
      }
      return;
    }
    case wire::Request::kCacheDrop: {
      const std::string& dataset = request.cache_drop().dataset();
      const auto [entries, bytes] = streams_.drop_cache(dataset);
      spdlog::info("cache drop ({}) requested by {}: {} entries, {} bytes dropped",
                   dataset.empty() ? "every dataset" : "dataset " + dataset.substr(0, 80), credentials_.describe(),
                   entries, bytes);
      wire::Reply r;
      r.mutable_cache_dropped()->set_entries(entries);
      r.mutable_cache_dropped()->set_bytes(bytes);
      return reply(rid, std::move(r));
    }
    case wire::Request::kDrain: {
      streams_.set_draining(true);
      spdlog::info("drain requested by {}: refusing new streams", credentials_.describe());
      wire::Reply r;
      r.set_ack("draining: new streams are refused, running streams continue");
      return reply(rid, std::move(r));
    }
    case wire::Request::kShutdown: {
      spdlog::info("shutdown requested by {}", credentials_.describe());
      wire::Reply r;
      r.set_ack("shutting down: running streams are failed with \"daemon shutting down\", then the daemon exits");
      reply(rid, std::move(r));
      server_.request_shutdown();
      return;
    }
    case wire::Request::kStatus: {
      // A page of at most half a frame (status_page.h): however many streams, the reply is sent.
      const StatusPage page{request.status().after_stream_id(), max_reply_bytes_ / 2};
      wire::Reply r;
      StatusView view = admin_ ? StatusView::everything() : StatusView::own(peer_.uid);
      view.cache_groups = admin_ && request.status().cache_groups();
      server_.fill_status(r.mutable_status(), view, page);
      return reply(rid, std::move(r));
    }
    case wire::Request::kHealth: {
      wire::Reply r;
      server_.fill_health(r.mutable_health());
      return reply(rid, std::move(r));
    }
    default:
      return protocol_error(
          rid, Error(ErrorCode::kProtocol, "request " + std::to_string(rid) + " has an unknown or empty body (field " +
                                               std::to_string(request.body_case()) +
                                               "); is the client newer than the daemon?"));
  }
}

}  // namespace batchd::daemon
