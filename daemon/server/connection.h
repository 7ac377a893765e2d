// connection.h — one client connection: reads length-prefixed Requests, dispatches them, writes Replies.
//
// Every frame is checked before dispatch: its announced length against limits.max_request_bytes (before the payload
// is buffered), then the protobuf parse result, then every enum field (enum_check.h), then the request type. A
// frame that fails the length or parse check gets an Error reply naming the problem, and then this connection — only
// this one — is closed; an undeclared enum value or an admin request from a non-admin (authorization.h) gets an
// Error reply to that request and the connection stays open (an attached worker's undeclared value closes it: its
// task is redone at once). Closing (by either side, for any reason) reclaims every stream, lease and segment the
// connection held.
//
// Memory per connection is bounded (issue 14): the bytes of one incomplete request frame (at most
// max_request_bytes, buffered as they arrive, never allocated up front from the announced length) and of one read
// (64 KiB) of requests not yet served, plus the unsent replies, which stop the dispatching of further requests as soon
// as they exceed kMaxQueuedBytes: the requests still buffered wait, and nothing more is read from the socket, until the
// client has read its replies down to half of that. Events of open streams (BatchReady, ...) are always queued; they
// are bounded by the streams' depth. A request frame not complete within limits.frame_timeout_ms of its first byte
// closes the connection with an Error naming the key (time spent paused by back-pressure does not count). A connection
// closed after an error keeps its last frames (that Error) for at most frame_timeout_ms more for the client to read,
// then is closed anyway. Refused admin requests are logged through Server::log_denied (rate-limited).
//
// A status reply is one page of at most half of limits.max_frame_bytes (streams/status_page.h); one that still
// exceeds the frame limit (too many workers or datasets for it) is answered with an Error naming the key, the
// connection staying open. Health replies are a few dozen bytes.
//
// A connection that sends AttachWorker becomes an attached worker of that stream (workers/attached_workers.h): it
// gets the stream's segment fd and its progress page fd (two frames), then WorkerTask events, and may send nothing
// but WorkerDone from then on (anything else is a protocol error that closes it, and its task is redone). A
// connection with open streams cannot attach, and an attached one cannot open streams.
//
// Outgoing frames are queued and written without blocking the event loop; a frame that carries a segment fd
// (file_descriptor strategy) sends it as SCM_RIGHTS on its first byte. Single-threaded: the daemon's io_context.
#pragma once

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>
#include <string>

#include "batchd/wire/frame_queue.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"
#include "streams/stream_settings.h"
#include "server/peer_credentials.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {

class Server;

class Connection final : public EventSink, public WorkerLink, public std::enable_shared_from_this<Connection> {
 public:
  // Above this many bytes of unsent replies no further request is dispatched (resumed at half).
  static constexpr size_t kMaxQueuedBytes = 256u << 10;

  // `admin`: the peer may send admin requests and sees every stream (AdminPolicy::is_admin).
  Connection(boost::asio::local::stream_protocol::socket socket, uint64_t id, Server& server, StreamManager& streams,
             const Limits& limits, PeerCredentials credentials, bool admin);
  ~Connection() override;

  void start();
  void send_event(const wire::Reply& event) override;
  // WorkerLink (an attached worker's connection).
  void send_task(const wire::WorkerTask& task) override;
  void end_attachment(const wire::WorkerDetach& detach) override;
  // Closes once the queued frames are written (or at once if `now`).
  void close(bool now);

  uint64_t id() const { return peer_.connection_id; }
  const Peer& peer() const { return peer_; }
  const PeerCredentials& credentials() const { return credentials_; }

 private:
  void read();
  void on_readable();
  // Dispatches the buffered complete frames until none is left or the reply queue is over its cap; then reads on.
  void process();
  void handle(const std::string& payload);
  void dispatch(const wire::Request& request);  // the request router (connection_dispatch.cc)
  // AttachWorker, WorkerDone, and any request of an attached worker (connection_worker.cc).
  void dispatch_worker(const wire::Request& request);
  void attach_worker(uint64_t request_id, const wire::AttachWorker& attach);
  void arm_frame_deadline();
  void on_frame_deadline();
  void reply(uint64_t request_id, wire::Reply reply, wire::UniqueFd fd = {});
  void reply_error(uint64_t request_id, const Error& error);
  void protocol_error(uint64_t request_id, const Error& error);
  void flush();
  void finish();

  uint64_t attached_stream_ = 0;  // an attached worker of this stream (0: a client)
  boost::asio::local::stream_protocol::socket socket_;
  Server& server_;
  StreamManager& streams_;
  uint32_t max_reply_bytes_;
  std::chrono::milliseconds frame_timeout_;
  PeerCredentials credentials_;
  bool admin_;
  Peer peer_;
  wire::FrameDecoder decoder_;
  boost::asio::steady_timer frame_deadline_;
  uint64_t frames_done_ = 0;     // complete frames taken from the decoder
  bool deadline_armed_ = false;  // frame_deadline_ runs for the partly buffered frame number armed_for_
  uint64_t armed_for_ = 0;
  wire::FrameQueue queue_;  // replies and events not yet written (wire/frame_queue.h)
  bool reading_ = false;      // an async_wait for readability is pending
  bool read_paused_ = false;  // back-pressure: queue_.bytes() went over kMaxQueuedBytes
  bool waiting_to_write_ = false;
  bool closing_ = false;
  bool closed_ = false;
};

}  // namespace batchd::daemon
