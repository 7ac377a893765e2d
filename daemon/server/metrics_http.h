// metrics_http.h — an optional Prometheus endpoint: GET /metrics on a TCP address (config [metrics] listen, e.g.
// "127.0.0.1:9464"; off when empty), served by Boost.Beast on the daemon's event loop. The body is the Prometheus
// text exposition format 0.0.4 of the same numbers `batchctl stats --json` shows.
//
// A TCP reader has no credentials: it is served as a non-admin who owns no stream (StatusView::none()): daemon-wide
// counts and sums (streams, connections, segment bytes, batches redone, uptime) and the worker processes' series.
// Per-stream series (labels stream, dataset, pipeline) only with [metrics] per_stream = true; never a client pid,
// uid or segment name.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"

namespace batchd::daemon {

// The exposition text for a status snapshot: per-stream series for the streams `status` lists (none in a
// StatusView::none() snapshot), every stream counted in batchd_streams and batchd_segment_bytes.
std::string prometheus_text(const wire::StatusReply& status);

class MetricsServer final {
 public:
  // `listen` is "host:port" (IPv4/IPv6 literal or "localhost"); binding errors are returned, naming the address.
  static Result<std::unique_ptr<MetricsServer>> create(boost::asio::io_context& io, const std::string& listen,
                                                       std::function<wire::StatusReply()> snapshot);
  void stop();
  uint16_t port() const;

 private:
  MetricsServer(boost::asio::io_context& io, std::function<wire::StatusReply()> snapshot)
      : acceptor_(io), snapshot_(std::move(snapshot)) {}
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  std::function<wire::StatusReply()> snapshot_;
};

}  // namespace batchd::daemon
