// connection.h — one client connection: reads length-prefixed Requests, dispatches them, writes Replies.
//
// Every frame is checked before dispatch: its announced length against limits.max_frame_bytes (before the payload
// is buffered), then the protobuf parse result, then the request type. A frame that fails any check gets an Error
// reply naming the problem, and then this connection — only this one — is closed; the daemon serves everyone else.
// Closing (by either side, for any reason) reclaims every stream, lease and segment the connection held.
//
// Outgoing frames are queued and written without blocking the event loop; a frame that carries a segment fd
// (file_descriptor strategy) sends it as SCM_RIGHTS on its first byte.
#pragma once

#include <boost/asio/local/stream_protocol.hpp>
#include <deque>
#include <memory>
#include <string>

#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {

class Server;

class Connection final : public EventSink, public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::local::stream_protocol::socket socket, uint64_t id, Server& server,
             StreamManager& streams, uint32_t max_frame_bytes);
  ~Connection() override;

  void start();
  void send_event(const wire::Reply& event) override;
  // Closes once the queued frames are written (or at once if `now`).
  void close(bool now);

  uint64_t id() const { return peer_.connection_id; }
  const Peer& peer() const { return peer_; }

 private:
  struct Outgoing {
    std::string frame;
    wire::UniqueFd fd;  // sent with the first byte, then closed
    size_t sent = 0;
  };

  void read();
  void on_read(size_t bytes);
  void dispatch(const wire::Request& request);
  void reply(uint64_t request_id, wire::Reply reply, wire::UniqueFd fd = {});
  void reply_error(uint64_t request_id, const Error& error);
  void protocol_error(uint64_t request_id, const Error& error);
  void flush();
  void finish();

  boost::asio::local::stream_protocol::socket socket_;
  Server& server_;
  StreamManager& streams_;
  uint32_t max_frame_bytes_;
  Peer peer_;
  wire::FrameDecoder decoder_;
  std::vector<char> read_buffer_;
  static constexpr size_t kMaxQueuedBytes = 4u << 20;  // stop reading requests above this much unsent output
  std::deque<Outgoing> queue_;
  size_t queued_bytes_ = 0;
  bool read_paused_ = false;
  bool waiting_to_write_ = false;
  bool closing_ = false;
  bool closed_ = false;
};

}  // namespace batchd::daemon
