// The Admin handle of batchd/admin.h (requests over a ClientCore) and the JSON renderings.
#include "batchd/admin.h"

#include <google/protobuf/util/json_util.h>

#include "admin/admin_wire.h"
#include "core/client_core.h"

namespace batchd {

namespace {

template <typename Message>
Result<std::string> json_of(const Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  if (auto st = google::protobuf::util::MessageToJsonString(m, &out, options); !st.ok()) {
    return Error(ErrorCode::kInternal, "cannot render " + m.GetTypeName() + " as JSON: " + st.ToString());
  }
  return out;
}

// The acknowledgement of a Drain or Shutdown request.
Result<std::string> ack_of(detail::ClientCore& core, wire::Request request) {
  auto reply = core.call(std::move(request));
  if (!reply.ok()) return reply.error();
  if (!reply->reply.has_ack()) return Error(ErrorCode::kProtocol, "the daemon answered without an acknowledgement");
  return reply->reply.ack();
}

}  // namespace

Admin::Admin(std::shared_ptr<detail::ClientCore> core) : core_(std::move(core)) {}
Admin::Admin(Admin&&) noexcept = default;
Admin& Admin::operator=(Admin&&) noexcept = default;
Admin::~Admin() = default;

Result<Admin> Admin::connect(const std::string& socket_path) {
  ConnectOptions options;
  options.socket_path = socket_path;
  return connect(options);
}

Result<Admin> Admin::connect(const ConnectOptions& options) {
  auto core = detail::ClientCore::connect(options);
  if (!core.ok()) return core.error();
  return Admin(std::move(core).value());
}

const std::string& Admin::socket_path() const { return core_->socket_path(); }
const DaemonCredentials& Admin::daemon_credentials() const { return core_->daemon(); }

Result<DaemonStatus> Admin::status() {
  auto all = status_page(0);
  while (all.ok() && all->next_after_stream_id != 0) {
    auto next = status_page(all->next_after_stream_id);
    if (!next.ok()) return next.error();
    if (next->next_after_stream_id != 0 && next->next_after_stream_id <= all->next_after_stream_id) {
      return Error(ErrorCode::kProtocol, "the daemon's status pages do not advance (page after stream " +
                                             std::to_string(all->next_after_stream_id) + " ends at stream " +
                                             std::to_string(next->next_after_stream_id) + ")");
    }
    // The totals are the last page's; the lists are every page's.
    next->streams.insert(next->streams.begin(), std::make_move_iterator(all->streams.begin()),
                         std::make_move_iterator(all->streams.end()));
    next->segments.insert(next->segments.begin(), std::make_move_iterator(all->segments.begin()),
                          std::make_move_iterator(all->segments.end()));
    all = std::move(next);
  }
  return all;
}

Result<DaemonStatus> Admin::status_page(uint64_t after_stream_id, bool cache_groups) {
  wire::Request request;
  request.mutable_status()->set_after_stream_id(after_stream_id);
  request.mutable_status()->set_cache_groups(cache_groups);
  auto reply = core_->call(std::move(request));
  if (!reply.ok()) return reply.error();
  if (!reply->reply.has_status()) return Error(ErrorCode::kProtocol, "the daemon answered a status request wrongly");
  return detail::from_wire(reply->reply.status());
}

Result<DaemonHealth> Admin::health() {
  wire::Request request;
  request.mutable_health();
  auto reply = core_->call(std::move(request));
  if (!reply.ok()) return reply.error();
  if (!reply->reply.has_health()) return Error(ErrorCode::kProtocol, "the daemon answered a health request wrongly");
  return detail::from_wire(reply->reply.health());
}

Result<std::vector<StreamStatus>> Admin::streams() {
  auto st = status();
  if (!st.ok()) return st.error();
  return std::move(st->streams);
}

Result<std::vector<WorkerStatus>> Admin::workers() {
  auto st = status();
  if (!st.ok()) return st.error();
  return std::move(st->workers);
}

Result<std::vector<SegmentStatus>> Admin::segments() {
  auto st = status();
  if (!st.ok()) return st.error();
  return std::move(st->segments);
}

Result<std::string> Admin::drain() {
  wire::Request request;
  request.mutable_drain();
  return ack_of(*core_, std::move(request));
}

Result<std::string> Admin::shutdown() {
  wire::Request request;
  request.mutable_shutdown();
  return ack_of(*core_, std::move(request));
}

Result<CacheDropped> Admin::drop_cache(const std::string& dataset) {
  wire::Request request;
  request.mutable_cache_drop()->set_dataset(dataset);
  auto reply = core_->call(std::move(request));
  if (!reply.ok()) return reply.error();
  if (!reply->reply.has_cache_dropped()) return Error(ErrorCode::kProtocol, "the daemon answered without cache_dropped");
  return CacheDropped{reply->reply.cache_dropped().entries(), reply->reply.cache_dropped().bytes()};
}

Result<std::string> to_json(const DaemonStatus& status) { return json_of(detail::to_wire(status)); }
Result<std::string> to_json(const ShmReport& report) { return json_of(detail::to_wire(report)); }

}  // namespace batchd
