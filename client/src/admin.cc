// The Admin handle of batchd/admin.h (requests over a ClientCore) and the JSON renderings.
#include "batchd/admin.h"

#include <google/protobuf/util/json_util.h>

#include "admin_wire.h"
#include "client_core.h"

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
  wire::Request request;
  request.mutable_status();
  auto reply = core_->call(std::move(request));
  if (!reply.ok()) return reply.error();
  if (!reply->reply.has_status()) return Error(ErrorCode::kProtocol, "the daemon answered a status request wrongly");
  return detail::from_wire(reply->reply.status());
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

Result<std::string> to_json(const DaemonStatus& status) { return json_of(detail::to_wire(status)); }
Result<std::string> to_json(const ShmReport& report) { return json_of(detail::to_wire(report)); }

}  // namespace batchd
