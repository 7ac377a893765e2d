#include "server/metrics_http.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <sstream>

namespace batchd::daemon {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

std::string label_escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// One HTTP exchange: read a request, answer it, close.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const std::function<wire::StatusReply()>& snapshot)
      : stream_(std::move(socket)), snapshot_(snapshot) {}

  void start() {
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, request_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (!ec) self->respond();
    });
  }

 private:
  void respond() {
    response_.version(request_.version());
    response_.keep_alive(false);
    if (request_.method() != http::verb::get || request_.target() != "/metrics") {
      response_.result(http::status::not_found);
      response_.set(http::field::content_type, "text/plain");
      response_.body() = "batchd serves GET /metrics\n";
    } else {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, "text/plain; version=0.0.4");
      response_.body() = prometheus_text(snapshot_());
    }
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  beast::tcp_stream stream_;
  const std::function<wire::StatusReply()>& snapshot_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

std::string prometheus_text(const wire::StatusReply& st) {
  std::ostringstream o;
  auto family = [&](const char* name, const char* type, const char* help) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  };
  family("batchd_up_seconds", "gauge", "Seconds since the daemon started.");
  o << "batchd_up_seconds " << st.uptime_seconds() << '\n';
  family("batchd_connections", "gauge", "Connected clients.");
  o << "batchd_connections " << st.connections() << '\n';
  family("batchd_streams", "gauge", "Open streams.");
  o << "batchd_streams " << st.streams_size() + st.streams_of_others() << '\n';
  family("batchd_shared_streams", "gauge", "Open shared productions (OpenStream.share), each counted once above.");
  o << "batchd_shared_streams " << st.shared_streams() << '\n';
  family("batchd_share_subscribers", "gauge", "Streams reading a shared production.");
  o << "batchd_share_subscribers " << st.share_subscribers() << '\n';
  family("batchd_batches_redone_total", "counter", "Tasks (chunks of batches) given to a new worker after theirs died.");
  o << "batchd_batches_redone_total " << st.batches_redone() << '\n';
  uint64_t shm = st.segment_bytes_of_others();
  for (const auto& s : st.segments()) shm += s.bytes();
  family("batchd_segment_bytes", "gauge", "Bytes of shared memory held by open streams' segments.");
  o << "batchd_segment_bytes " << shm << '\n';

  // The sample cache (issue 27): daemon-wide; no dataset or op labels (a TCP reader has no credentials).
  const wire::CacheStatus& cache = st.cache();
  // Daemon-wide series without labels: one line each after their HELP and TYPE.
  struct Plain {
    const char* name;
    const char* type;
    const char* help;
    uint64_t value;
  };
  auto plain = [&](std::initializer_list<Plain> series) {
    for (const Plain& p : series) {
      family(p.name, p.type, p.help);
      o << p.name << ' ' << p.value << '\n';
    }
  };
  plain({
      {"batchd_cache_max_bytes", "gauge", "The sample cache's bound (cache.max_bytes; 0: no cache).",
       cache.max_bytes()},
      {"batchd_cache_bytes", "gauge", "Bytes of the sample cache's entries and index (what cache.max_bytes bounds).",
       cache.live_bytes()},
      {"batchd_cache_resident_bytes", "gauge", "Memory the sample cache holds now.", cache.resident_bytes()},
      {"batchd_cache_index_used", "gauge", "Index slots holding an entry or being filled.", cache.index_used()},
      {"batchd_cache_evicted_bytes_total", "counter", "Bytes of live cache entries the cleaner evicted to free "
       "segments (only after drops left them scattered).", cache.evicted_bytes()},
      {"batchd_cache_segments_free", "gauge", "Segments of the cache's data area with no live entry.",
       cache.segments_free()},
      {"batchd_cache_hits_total", "counter", "Samples served from the sample cache.", cache.hits()},
      {"batchd_cache_fills_total", "counter", "Samples computed and kept in the sample cache.", cache.fills()},
      {"batchd_cache_uncached_total", "counter", "Samples at a cache point computed and not kept (cache, uid share "
       "or index full, or no cache).", cache.uncached()},
      {"batchd_cache_dropped_bytes_total", "counter", "Bytes of cache entries dropped (batchctl cache --drop, "
       "reloads, workers that died filling, files that changed, evictions).", cache.dropped_bytes()},
  });
  family("batchd_cache_refused_total", "counter", "Cache fills refused, by reason (full: cache.max_bytes; uid: "
                                                  "cache.max_bytes_per_uid; index: the index too full).");
  o << "batchd_cache_refused_total{reason=\"full\"} " << cache.refused_full() << '\n';
  o << "batchd_cache_refused_total{reason=\"uid\"} " << cache.refused_uid() << '\n';
  o << "batchd_cache_refused_total{reason=\"index\"} " << cache.refused_index() << '\n';

  // Remote shards' disk cache (issue 28): daemon-wide, no URL or dataset label.
  const wire::RemoteCacheInfo& rc = st.remote_cache();
  const wire::RemoteShardsInfo& rt = rc.totals();
  plain({
      {"batchd_remote_cache_max_bytes", "gauge", "The remote shard cache's bound (remote.cache_max_bytes).",
       rc.max_bytes()},
      {"batchd_remote_cache_bytes", "gauge", "Bytes of fetched shards on disk, downloads under way included.",
       rc.bytes()},
      {"batchd_remote_fetching", "gauge", "Shard downloads under way.", rc.fetching()},
      {"batchd_remote_fetched_total", "counter", "Remote shards downloaded.", rt.fetched()},
      {"batchd_remote_fetched_bytes_total", "counter", "Bytes of remote shards downloaded.", rt.fetched_bytes()},
      {"batchd_remote_prefetched_total", "counter", "Shards downloaded ahead of the tasks that read them.",
       rt.prefetched()},
      {"batchd_remote_waited_total", "counter", "Shards a task had to wait for (not fetched ahead in time).",
       rt.waited()},
      {"batchd_remote_failed_total", "counter", "Shard downloads that failed after their retries.", rt.failed()},
      {"batchd_remote_evicted_total", "counter", "Shards removed from the cache to make room.", rt.evicted()},
  });

  struct Metric {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const wire::StreamInfo&);
  };
  static const Metric stream_metrics[] = {
      {"batchd_stream_samples_total", "counter", "Samples delivered to the client.",
       [](const wire::StreamInfo& s) { return static_cast<double>(s.samples_delivered()); }},
      {"batchd_stream_bytes_total", "counter", "Tensor bytes delivered to the client.",
       [](const wire::StreamInfo& s) { return static_cast<double>(s.bytes_delivered()); }},
      {"batchd_stream_ahead_seconds_total", "counter", "Time every slot held a finished batch (daemon ahead).",
       [](const wire::StreamInfo& s) { return s.ahead_seconds(); }},
      {"batchd_stream_stall_seconds_total", "counter",
       "Time the client held no batch and none was ready (data stall).",
       [](const wire::StreamInfo& s) { return s.stall_seconds(); }},
      {"batchd_stream_samples_skipped_total", "counter", "Bad samples replaced under on_error=skip.",
       [](const wire::StreamInfo& s) { return static_cast<double>(s.samples_skipped()); }},
      {"batchd_stream_worker_deaths_total", "counter", "Workers that died making this stream's batches.",
       [](const wire::StreamInfo& s) { return static_cast<double>(s.worker_deaths()); }},
      {"batchd_stream_cache_hits_total", "counter", "Samples of this stream served from the sample cache.",
       [](const wire::StreamInfo& s) { return static_cast<double>(s.stages().cache_hits()); }},
      {"batchd_stream_cache_fills_total", "counter", "Samples of this stream computed and kept in the sample cache.",
       [](const wire::StreamInfo& s) { return static_cast<double>(s.stages().cache_fills()); }},
      {"batchd_stream_cache_uncached_total", "counter",
       "Samples of this stream at a cache point computed and not kept (cache, uid share or index full).",
       [](const wire::StreamInfo& s) { return static_cast<double>(s.stages().cache_uncached()); }},
  };
  for (const auto& m : stream_metrics) {
    if (st.streams_size() == 0) break;  // per-stream series are off ([metrics] per_stream), or no stream is open
    family(m.name, m.type, m.help);
    for (const auto& s : st.streams()) {  // no client pid or uid: anyone who reaches the port reads this
      o << m.name << "{stream=\"" << s.stream_id() << "\",dataset=\"" << label_escape(s.dataset())
        << "\",pipeline=\"" << label_escape(s.pipeline()) << "\"} " << m.value(s) << '\n';
    }
  }
  family("batchd_worker_busy_seconds_total", "counter", "Time the worker spent making batches.");
  for (int i = 0; i < st.workers_size(); ++i) {
    o << "batchd_worker_busy_seconds_total{worker=\"" << i << "\"} " << st.workers(i).busy_seconds() << '\n';
  }
  family("batchd_worker_batches_total", "counter", "Batches the worker made.");
  for (int i = 0; i < st.workers_size(); ++i) {
    o << "batchd_worker_batches_total{worker=\"" << i << "\"} " << st.workers(i).batches_done() << '\n';
  }
  family("batchd_worker_restarts_total", "counter", "Times the worker died and was replaced.");
  for (int i = 0; i < st.workers_size(); ++i) {
    o << "batchd_worker_restarts_total{worker=\"" << i << "\"} " << st.workers(i).restarts() << '\n';
  }
  return o.str();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::create(boost::asio::io_context& io, const std::string& listen,
                                                             std::function<wire::StatusReply()> snapshot) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, "metrics.listen '" + listen + "' must be host:port, e.g. "
                                                                            "127.0.0.1:9464");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  int port = -1;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
  }
  if (ec || port < 0 || port > 65535) {
    return Error(ErrorCode::kInvalidArgument, "metrics.listen '" + listen + "' is not an IP address and port");
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer(io, std::move(snapshot)));
  const tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
  server->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) server->acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) server->acceptor_.bind(endpoint, ec);
  if (!ec) server->acceptor_.listen(tcp::acceptor::max_listen_connections, ec);
  if (ec) return Error(ErrorCode::kUnavailable, "cannot serve metrics on " + listen + ": " + ec.message());
  spdlog::info("Prometheus metrics on http://{}:{}/metrics", host, server->port());
  server->accept();
  return server;
}

uint16_t MetricsServer::port() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec).port();
}

void MetricsServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(socket), snapshot_)->start();
    accept();
  });
}

void MetricsServer::stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

}  // namespace batchd::daemon
